import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTemporalRuntime } from '../../src/observability/temporal-runtime.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { addEndpoint, addEvent, startFanoutHarness, uniqueSource, type FanoutHarness } from '../fanout/support/harness.js';

// What the worker's log stream shows when a delivery is retried: the SDK's WARN for the failed
// attempt used to carry the whole base64 task token. Installed before the harness, so this file's
// process runs with the production Runtime logger (each test file has its own process).

const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    lines.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((l) => l !== ''),
    );
    done();
  },
});

/** Every base64 (or base64url) run in the text that decodes to bytes containing `workflowId`. */
function encodedTokensNaming(text: string, workflowId: string): string[] {
  return [...text.matchAll(/[A-Za-z0-9+/_-]{40,}={0,2}/g)]
    .map((m) => m[0])
    .filter((run) => [Buffer.from(run, 'base64'), Buffer.from(run, 'base64url')].some((bytes) => bytes.includes(workflowId)));
}

describe('encodedTokensNaming', () => {
  it('finds a task token by what it encodes, wherever it is', () => {
    const token = Buffer.concat([
      Buffer.from([0x0a, 0x24]),
      Buffer.from('3f1c0a4e-5a8b-4c4e-9d2e-1b7e0c9a6f11'),
      Buffer.from([0x12, 0x03, 0x61, 0x62, 0x63]),
    ]);
    const line = JSON.stringify({ msg: `Activity failed: ${token.toString('base64')}`, other: token.toString('base64url') });
    expect(encodedTokensNaming(line, '3f1c0a4e-5a8b-4c4e-9d2e-1b7e0c9a6f11')).toHaveLength(2);
    expect(encodedTokensNaming(line, 'another-workflow-id')).toEqual([]);
  });
});

describe('Temporal SDK logs in the JSON stream', () => {
  let h: FanoutHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    installTemporalRuntime(pino({ level: 'warn' }, sink));
    h = await startFanoutHarness();
    // first attempt 500 (retried by Temporal), then 200
    receiver = await startReceiver([{ status: 500 }, { status: 200 }]);
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('a retried attempt logs a JSON WARN naming workflow and activity, without the task token', async () => {
    const source = uniqueSource('retry');
    await addEndpoint(h.repos, { source, url: receiver.url, maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    expect(receiver.requests).toHaveLength(2);

    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const failed = parsed.filter((l) => l.component === 'temporal' && l.msg === 'Activity failed');
    expect(failed.length, lines.join('\n')).toBeGreaterThanOrEqual(1);
    expect(failed[0]?.level).toBe(40);
    expect(failed[0]?.workflowId).toBe(eventId);
    expect(failed[0]?.activityType).toBeTypeOf('string');
    // the token itself, under any key or inside any text: a task token is the base64 of a
    // protobuf that holds the workflow id (here the event id) among its fields
    for (const line of lines) expect(encodedTokensNaming(line, eventId), line).toEqual([]);
  });
});
