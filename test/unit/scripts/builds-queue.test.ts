import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildOutcome } from '../../support/builds.js';

const run = promisify(execFile);
const BUILDS = fileURLToPath(new URL('../../../scripts/tools/builds.sh', import.meta.url));

/**
 * scripts/tools/builds.sh's queue in a scratch tree whose "build" of the chart tools is a script
 * that takes BUILD_SECONDS: what provision.sh and the tests see while a build runs on a new machine.
 */
let root: string;
const buildsWith = (env: Record<string, string>, ...args: string[]) =>
  run('bash', [path.join(root, 'scripts/tools/builds.sh'), ...args], {
    env: { ...process.env, WEBHOOK_FANOUT_SKIP_KUBE: '1', BUILDS_NICE: '0', ...env },
    timeout: 30_000,
  });
const builds = (...args: string[]) => buildsWith({}, ...args);
const state = async (group: string) => (await readFile(path.join(root, '.cache/builds', `${group}.state`), 'utf8')).trim();

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'wf-builds-'));
  await mkdir(path.join(root, 'scripts/tools'), { recursive: true });
  await copyFile(BUILDS, path.join(root, 'scripts/tools/builds.sh'));
  const install = path.join(root, 'scripts/tools/install.sh');
  // as the real build scripts do: once built, a run finds nothing to do and says so by its exit status
  await writeFile(
    install,
    [
      '#!/usr/bin/env bash',
      '[ -f "$0.built" ] && exit "${BUILD_NOOP_EXIT:-0}"',
      '[ "${BUILD_FAILS:-}" = 1 ] && { echo "the build broke" >&2; exit 7; }',
      'sleep "${BUILD_SECONDS:-3}"',
      'touch "$0.built"',
      'echo built',
      '',
    ].join('\n'),
  );
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
    expect(await state('chart-tools')).toMatch(/^ok [0-9]+/);
  }, 20_000);

  it('a run that finds the group built keeps the seconds of the build that did the work: ok <seconds> (cached)', async () => {
    const first = await buildsWith({ BUILD_SECONDS: '1' }, 'run', 'chart-tools');
    const built = await state('chart-tools');
    expect(built).toMatch(/^ok \d+$/);
    const seconds = Number(built.split(' ')[1]);
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(first.stderr).toContain(`builds: chart-tools ok after ${seconds} s`);

    const again = await buildsWith({ BUILD_SECONDS: '1' }, 'run', 'chart-tools');
    expect(await state('chart-tools')).toBe(`ok ${seconds} (cached)`);
    expect(again.stderr).toMatch(new RegExp(`builds: chart-tools ok after \\d+ s: built already \\(its build took ${seconds} s\\)`));
    // what README's table and .ci/run's log are read from
    expect((await builds('report')).stdout).toBe(`builds: chart-tools ok ${seconds} (cached)\n`);
    // and what the test files waiting for a build read (test/support/builds.ts)
    expect(buildOutcome(await state('chart-tools'))).toBe('ok');
  }, 20_000);

  it('a group built outside the queue (no build of it measured) is ok (cached)', async () => {
    await writeFile(path.join(root, 'scripts/tools/install.sh.built'), '');
    const r = await builds('run', 'chart-tools');
    expect(await state('chart-tools')).toBe('ok (cached)');
    expect(r.stderr).toMatch(/builds: chart-tools ok after \d+ s: built already\n/);
    expect(buildOutcome(await state('chart-tools'))).toBe('ok');
  }, 20_000);

  it('a failed build says so with its status and seconds, and wait exits 1', async () => {
    const r = await buildsWith({ BUILD_FAILS: '1' }, 'run', 'chart-tools');
    expect(await state('chart-tools')).toMatch(/^failed 7 \d+$/);
    expect(r.stderr).toMatch(/builds: chart-tools failed after \d+ s \(log: \.cache\/builds\/chart-tools\.log\)/);
    expect(buildOutcome(await state('chart-tools'))).toBe('failed');
    const waited = await builds('wait', 'chart-tools').then(
      () => undefined,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(waited?.code).toBe(1);
    expect(waited?.stderr).toContain('builds: chart-tools failed');
  }, 20_000);
});

describe("the brokers' downloads", () => {
  it('run beside a build, not after it', async () => {
    const brokers = path.join(root, 'scripts/tools/brokers.sh');
    await writeFile(brokers, ['#!/usr/bin/env bash', 'sleep 3', 'echo "fetched $1"', ''].join('\n'));
    await chmod(brokers, 0o755);
    const t0 = Date.now();
    await buildsWith({ BUILD_SECONDS: '3' }, 'run', 'kafka', 'chart-tools');
    // one after the other would be 6 s
    expect(Date.now() - t0).toBeLessThan(5_500);
    expect(await state('kafka')).toMatch(/^ok [0-9]+$/);
    expect(await state('chart-tools')).toMatch(/^ok [0-9]+$/);
    expect(await readFile(path.join(root, '.cache/builds/kafka.log'), 'utf8')).toBe('fetched kafka\n');
  }, 20_000);

  it('brokers.sh with Kafka fetched exits BUILD_NOOP_EXIT, and 0 when run by hand', async () => {
    const script = await readFile(fileURLToPath(new URL('../../../scripts/tools/brokers.sh', import.meta.url)), 'utf8');
    const version = /^KAFKA_VERSION=(\S+)/m.exec(script)?.[1];
    expect(version).toBeTruthy();
    const brokers = path.join(root, 'scripts/tools/brokers.sh');
    await writeFile(brokers, script);
    await mkdir(path.join(root, `.cache/kafka/${version}`), { recursive: true });
    await writeFile(path.join(root, `.cache/kafka/${version}/.complete`), '');
    // a fetch would say so on stderr
    expect((await run('bash', [brokers, 'kafka'])).stderr).toBe('');
    const queued = await run('bash', [brokers, 'kafka'], { env: { ...process.env, BUILD_NOOP_EXIT: '100' } }).then(
      () => 0,
      (err: { code?: number }) => err.code,
    );
    expect(queued).toBe(100);
  });
});

describe('a build script tells a no-op from a build by its exit status', () => {
  it('go-builds.sh with everything built exits BUILD_NOOP_EXIT, and 0 when run by hand', async () => {
    const script = await readFile(fileURLToPath(new URL('../../../scripts/tools/go-builds.sh', import.meta.url)), 'utf8');
    const version = /^OTELCOL_VERSION=(\S+)/m.exec(script)?.[1];
    const recipe = /^OTELCOL_RECIPE=(\S+)/m.exec(script)?.[1];
    expect(version && recipe).toBeTruthy();
    const go = path.join(root, 'scripts/tools/go-builds.sh');
    await writeFile(go, script);
    // what a finished build leaves: the binary and its version's stamp
    const bin = path.join(root, '.cache/go-servers/bin');
    await mkdir(bin, { recursive: true });
    await writeFile(path.join(bin, 'otelcol'), '#!/bin/sh\n');
    await chmod(path.join(bin, 'otelcol'), 0o755);
    await writeFile(path.join(bin, `.otelcol-${version}-r${recipe}`), '');
    // nothing is built: GO points nowhere, so a build would fail
    const byHand = await run('bash', [go, 'otelcol'], { env: { ...process.env, GO: '/nonexistent/go' } });
    expect(byHand.stderr).toBe('');
    const queued = await run('bash', [go, 'otelcol'], { env: { ...process.env, GO: '/nonexistent/go', BUILD_NOOP_EXIT: '100' } }).then(
      () => 0,
      (err: { code?: number }) => err.code,
    );
    expect(queued).toBe(100);
  });
});
