import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { cp, lstat, mkdtemp, readlink, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.js';
import { SHARED_ROOT, isRoot } from '../../src/dev/postgres-reach.js';
import { basic, http } from '../support/http.js';
import { eventually } from '../support/wait.js';

const REPO = path.resolve(import.meta.dirname, '../..');

/**
 * README's first command as root would run it on a cloud VM or in a container: a clone in a
 * folder only root may enter (root's home, `mktemp -d`), where the "postgres" user that embedded
 * Postgres runs as can reach neither node_modules nor .data/dev. The checkout is a copy of this
 * one (node_modules hard-linked: same files, same modes) under a mode-700 folder.
 */
describe('npm start from a checkout in a private folder', () => {
  let outer: string;
  let checkout: string;
  let child: ChildProcess;
  let output = '';
  let port: number;

  beforeAll(async () => {
    outer = await mkdtemp(path.join(tmpdir(), 'wf-private-'));
    expect((await stat(outer)).mode & 0o777).toBe(0o700);
    checkout = path.join(outer, 'webhook-fanout');
    await promisify(execFile)('mkdir', ['-p', checkout]);
    await promisify(execFile)('cp', ['-al', path.join(REPO, 'node_modules'), checkout]);
    for (const entry of ['src', 'examples', 'migrations', 'package.json', 'tsconfig.json']) {
      await cp(path.join(REPO, entry), path.join(checkout, entry), { recursive: true });
    }
    // the Temporal CLI that scripts/provision.sh fetched once for this checkout
    await symlink(path.join(REPO, '.cache'), path.join(checkout, '.cache'));
    port = await freePort();
    child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/cli.ts', 'dev'], {
      cwd: checkout,
      env: { ...process.env, PORT: String(port), MANAGEMENT_PORT: String(await freePort()), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
      return output.includes('dev mode is running');
    }, 120_000).catch((err: unknown) => {
      throw new Error(`dev mode did not start: ${String(err)}\n${output}`);
    });
  }, 180_000);

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    const link = path.join(checkout, '.data/dev/postgres');
    const moved = await readlink(link).catch(() => undefined);
    if (moved?.startsWith(SHARED_ROOT)) await rm(moved, { recursive: true, force: true });
    await rm(outer, { recursive: true, force: true });
  });

  it('starts, accepts a webhook (persisted and published) and stops cleanly on SIGTERM', async () => {
    const res = await http(`http://127.0.0.1:${port}/api/webhooks/example`, {
      method: 'POST',
      headers: { authorization: basic('example', 'example-password'), 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'evt_private_1', type: 'order.created' }),
    });
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({ duplicate: false });
    expect(output).not.toMatch(/EACCES|unhandled/i);

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('keeps Postgres data where the postgres user can reach it, linked from .data/dev (as root)', async () => {
    const link = await lstat(path.join(checkout, '.data/dev/postgres'));
    if (!isRoot()) {
      // not root: Postgres runs as this user, who reaches the checkout; nothing moves
      expect(link.isDirectory()).toBe(true);
      return;
    }
    expect(link.isSymbolicLink()).toBe(true);
    const target = await readlink(path.join(checkout, '.data/dev/postgres'));
    expect(target.startsWith(`${SHARED_ROOT}/data/`)).toBe(true);
    expect((await stat(path.join(target, 'PG_VERSION'))).isFile()).toBe(true);
    expect(output).toContain(target);
  });
});
