import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTemporalRuntime } from '../../src/observability/temporal-runtime.js';
import { startReceiver, type Receiver } from '../delivery/receiver.js';
import { addEndpoint, addEvent, startFanoutHarness, uniqueSource, type FanoutHarness } from '../fanout/support/harness.js';

// What the worker's log stream shows when a delivery is retried: the SDK's WARN for the failed
// attempt used to carry the whole base64 task token. Installed before the harness, so this file's
// process runs with the production Runtime logger (each test file has its own process).

const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    lines.push(...chunk.toString().split('\n').filter((l) => l !== ''));
    done();
  },
});

describe('Temporal SDK logs in the JSON stream', () => {
  let h: FanoutHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    installTemporalRuntime(pino({ level: 'warn' }, sink));
    h = await startFanoutHarness();
    let n = 0;
    // first attempt 500 (retried by Temporal), then 200
    receiver = await startReceiver((_req, res) => {
      res.statusCode = n++ === 0 ? 500 : 200;
      res.end();
    });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('a retried attempt logs a JSON WARN naming workflow and activity, without the task token', async () => {
    const source = uniqueSource('retry');
    await addEndpoint(h.repos, { source, url: `${receiver.url}/hook`, maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    expect(receiver.requests).toHaveLength(2);

    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const failed = parsed.filter((l) => l.component === 'temporal' && l.msg === 'Activity failed');
    expect(failed.length, lines.join('\n')).toBeGreaterThanOrEqual(1);
    expect(failed[0]?.level).toBe(40);
    expect(failed[0]?.workflowId).toBe(eventId);
    expect(failed[0]?.activityType).toBeTypeOf('string');
    for (const line of lines) expect(line).not.toContain('taskToken');
  });
});
