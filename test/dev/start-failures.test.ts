import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

// A dependency that does not come up must say which one and why (its exit, its last lines), and
// the run must read as failed: once it printed "No test files found" and "Unknown Error:
// undefined", and CI's last line read "0 failed".
describe('when a dependency of the tests does not start', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'start-failures-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('embedded Postgres that exits during start names its exit and its last log lines', async () => {
    const err: unknown = await startEmbeddedPostgres({ settings: { shared_buffers: 'plenty' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toMatch(/^embedded Postgres exited during start on port \d+ \(exit code 1\); its last log lines:\n/);
    expect(message).toMatch(/invalid value for parameter "shared_buffers": "plenty"/);
  }, 60_000);

  it('the global setup names the dependency, its exit and its output; the count line reads failed', async () => {
    // a Temporal CLI that fails the way a busy machine's did: it prints why, then exits
    const cli = path.join(dir, 'temporal');
    await writeFile(cli, '#!/bin/sh\necho "starting up" >&2\necho "bind: address already in use (fake)" >&2\nexit 3\n');
    await chmod(cli, 0o755);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_OPTIONS'));
    const child = spawn(
      path.join(REPO_ROOT, 'node_modules/.bin/vitest'),
      ['run', 'test/unit/domain/errors.test.ts', '--config', 'vitest.config.ts'],
      {
        cwd: REPO_ROOT,
        env: { ...env, TEMPORAL_CLI_PATH: cli, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

    expect(code, output).not.toBe(0);
    expect(output).toContain("the tests' global setup could not start its dependencies:");
    expect(output).toMatch(
      /Temporal dev server failed to start: temporal dev server exited during start \(exit code 3\); its last output:\s+starting up\s+bind: address already in use \(fake\)/,
    );
    expect(output).not.toContain('Unknown Error: undefined');
    expect(output).toMatch(/^0 passed, 1 failed$/m);
  }, 180_000);

  it('.ci/run counts a suite that exits non-zero with no failed test as a failure', () => {
    const script = [
      'source .ci/suite.sh',
      'run_suite bash -c \'echo "3 passed, 0 failed"; exit 1\' >/dev/null',
      'run_suite bash -c \'echo "2 passed, 0 failed"\' >/dev/null',
      'run_suite bash -c \'echo "no summary at all"; exit 0\' >/dev/null',
      'echo "$passed passed, $failed failed, rc $rc"',
    ].join('\n');
    const out = spawnSync('bash', ['-c', script], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(out.stdout.trim()).toBe('5 passed, 2 failed, rc 1');
  });
});
