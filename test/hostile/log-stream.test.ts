import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { freePort } from '../../src/dev/ports.js';

// A log pipeline reads one JSON object per line. Start-up failures (a configuration problem, a
// database that is not there) used to be plain text, knex's warnings ANSI-coloured text.

function expectJsonLines(text: string): Record<string, unknown>[] {
  expect(text).not.toContain('\u001b[');
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.map((line) => {
    let parsed: unknown;
    expect(() => (parsed = JSON.parse(line)), `not a JSON line: ${line}`).not.toThrow();
    return parsed as Record<string, unknown>;
  });
}

describe('start-up failures are JSON log lines', () => {
  it('a configuration error: one fatal line naming every problem, exit 2', async () => {
    const res = await cli(['ingest'], {
      DATABASE_URL: 'nope',
      PORT: '99999',
      TOPIC_ARN: 'arn:x',
      HTTP_HEADERS_TIMEOUT_SECONDS: '60',
      HTTP_REQUEST_TIMEOUT_SECONDS: '30',
    });
    expect(res.code).toBe(2);
    const lines = expectJsonLines(res.stdout + res.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe(60);
    expect(lines[0]?.msg).toContain('invalid configuration');
    expect(lines[0]?.problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('PORT must be an integer'),
        'HTTP_HEADERS_TIMEOUT_SECONDS must not exceed HTTP_REQUEST_TIMEOUT_SECONDS',
      ]),
    );
  });

  it('a database that is not there (migrate): JSON lines only, no password, exit 1', async () => {
    const port = await freePort();
    const res = await cli(['migrate'], { DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/db`, LOG_LEVEL: 'info' });
    expect(res.code).toBe(1);
    const lines = expectJsonLines(res.stdout + res.stderr);
    expect(lines.some((l) => l.level === 60 || l.level === 50)).toBe(true);
    expect(res.stdout + res.stderr).not.toContain('hunter2');
  });
});
