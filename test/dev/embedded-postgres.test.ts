import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { eventually } from '../support/wait.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('embedded Postgres (the real server)', () => {
  it('stop() returns when the server already ended on its own SIGINT, as a Ctrl-C in a terminal does to the whole process group', async () => {
    const pg = await startEmbeddedPostgres();
    // the server's own process, as the terminal's SIGINT reaches it: postmaster.pid's first line
    const pid = Number((await readFile(path.join(pg.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    expect(alive(pid)).toBe(true);
    process.kill(pid, 'SIGINT');
    await eventually(async () => !alive(pid), { timeoutMs: 20_000, intervalMs: 100, what: 'Postgres to end on SIGINT' });
    // dev mode's shutdown waits for this; the library alone waited for an exit event that had come
    const stopped = await Promise.race([pg.stop().then(() => 'stopped'), sleep(10_000).then(() => 'still waiting after 10 s')]);
    expect(stopped).toBe('stopped');
  }, 60_000);
});
