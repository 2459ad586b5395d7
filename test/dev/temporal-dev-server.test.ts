import { describe, expect, it } from 'vitest';
import { startTemporalDevServer } from '../../src/dev/temporal-dev-server.js';

describe('the Temporal dev server (the real CLI)', () => {
  it('that exits during start fails with the reason it printed, not just "exited"', async () => {
    // a database file it can not create: the server prints why and exits before it listens
    const err: unknown = await startTemporalDevServer({ dbFile: '/proc/no-such-dir/temporal.db' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^temporal dev server exited during start \((exit code [1-9]\d*|killed by SIG\w+)\); its last output:\n\S/,
    );
    expect((err as Error).message).toMatch(/temporal\.db|no-such-dir|sqlite/i);
  }, 60_000);
});
