import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const BUILDS = fileURLToPath(new URL('../../../scripts/tools/builds.sh', import.meta.url));

/**
 * scripts/tools/builds.sh's queue in a scratch tree whose "build" of the chart tools is a script
 * that takes BUILD_SECONDS: what provision.sh and the tests see while a build runs on a new machine.
 */
let root: string;
const builds = (...args: string[]) =>
  run('bash', [path.join(root, 'scripts/tools/builds.sh'), ...args], {
    env: { ...process.env, WEBHOOK_FANOUT_SKIP_KUBE: '1', BUILDS_NICE: '0' },
    timeout: 30_000,
  });

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'wf-builds-'));
  await mkdir(path.join(root, 'scripts/tools'), { recursive: true });
  await copyFile(BUILDS, path.join(root, 'scripts/tools/builds.sh'));
  const install = path.join(root, 'scripts/tools/install.sh');
  await writeFile(install, '#!/usr/bin/env bash\nsleep "${BUILD_SECONDS:-3}"\necho built\n');
  await chmod(install, 0o755);
});
afterEach(async () => {
  await builds('wait', 'chart-tools').catch(() => undefined);
  await rm(root, { recursive: true, force: true });
});

describe('the background build queue', () => {
  it('a second start while a build runs returns at once (the queue does not hold the start lock), and wait waits for it', async () => {
    process.env.BUILD_SECONDS = '3';
    await builds('start', 'chart-tools');
    const t0 = Date.now();
    const second = await builds('start', 'chart-tools');
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(second.stderr).toContain('the background queue already runs');

    await builds('wait', 'chart-tools');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2_500);
    const state = await readFile(path.join(root, '.cache/builds/chart-tools.state'), 'utf8');
    expect(state).toMatch(/^ok [0-9]+/);
  }, 20_000);
});
