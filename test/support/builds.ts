import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Go builds that scripts/tools/builds.sh runs in the background while the tests run (the
 * binaries no registry ships), and the brokers it downloads or installs (Kafka, RabbitMQ, NATS). A test file that needs one awaits it at its top, before its tests
 * are collected, so it takes no hook's or test's time limit; the other files run meanwhile
 * (vitest.config.ts runs the waiting files last, in the queue's order).
 */
export type BuildGroup = 'kafka' | 'rabbitmq' | 'nats' | 'chart-tools' | 'kube' | 'otelcol' | 'temporal';

/** The queue's order (scripts/tools/builds.sh): the files that wait for an earlier group run first. */
export const BUILD_ORDER: readonly BuildGroup[] = ['kafka', 'rabbitmq', 'nats', 'kube', 'chart-tools', 'otelcol', 'temporal'];

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = path.join(REPO_ROOT, '.cache/builds');
const POLL_MS = 5_000;

/** A binary given by the environment is not the queue's to wait for. */
const OVERRIDE: Record<BuildGroup, string> = {
  kafka: 'KAFKA_LIBS_DIR',
  rabbitmq: 'RABBITMQ_SERVER_PATH',
  nats: 'NATS_SERVER_PATH',
  'chart-tools': 'WEBHOOK_FANOUT_TOOLS_DIR',
  kube: 'KUBE_ASSETS_DIR',
  otelcol: 'OTELCOL_PATH',
  temporal: 'TEMPORAL_SERVER_PATH',
};

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function queueAlive(): boolean {
  const pid = Number(readText(path.join(DIR, 'queue.pid')));
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function logTail(group: BuildGroup): string {
  const log = readText(path.join(DIR, `${group}.log`)) ?? '';
  return log.split('\n').slice(-20).join('\n');
}

/**
 * Resolves when each group is built: at once when the queue never had it (built earlier, by hand,
 * or given by the environment; the tool's own lookup then says whether it is there). Rejects when
 * its build failed (with the end of its log), when the queue died with it unfinished, or after
 * WEBHOOK_FANOUT_BUILD_WAIT_MINUTES (default 60).
 */
export async function waitForBuilds(...groups: BuildGroup[]): Promise<void> {
  const deadline = Date.now() + Number(process.env.WEBHOOK_FANOUT_BUILD_WAIT_MINUTES ?? '60') * 60_000;
  for (const group of groups) {
    if (process.env[OVERRIDE[group]]) continue;
    const stateFile = path.join(DIR, `${group}.state`);
    let told = false;
    for (;;) {
      const state = existsSync(stateFile) ? (readText(stateFile) ?? '') : 'ok';
      const outcome = buildOutcome(state);
      if (outcome === 'ok') break;
      if (outcome === 'failed')
        throw new Error(
          `the background build ${group} failed (${state}; scripts/tools/builds.sh); the end of .cache/builds/${group}.log:\n${logTail(group)}`,
        );
      if (!queueAlive())
        throw new Error(
          `the background build ${group} is "${state}" but its queue is gone: see .cache/builds/queue.log, or run bash scripts/tools/builds.sh run ${group}`,
        );
      if (Date.now() > deadline)
        throw new Error(`the background build ${group} is still "${state}": gave up waiting (WEBHOOK_FANOUT_BUILD_WAIT_MINUTES)`);
      if (!told) {
        console.log(`waiting for the background build ${group} (${state}; .cache/builds/${group}.log)`);
        told = true;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

/**
 * What a group's state line says (scripts/tools/builds.sh): built (`ok <seconds>`, or `ok
 * <seconds> (cached)` when the queue found it built already), failed (`failed <rc> <seconds>`), or
 * still to come (queued, running).
 */
export function buildOutcome(state: string): 'ok' | 'failed' | 'pending' {
  const word = state.split(' ')[0];
  return word === 'ok' ? 'ok' : word === 'failed' ? 'failed' : 'pending';
}

/** The groups a test file waits for, read from its text (for the sequencer): -1 when none. */
export function lastBuildWaitedFor(source: string): number {
  let last = -1;
  for (const m of source.matchAll(/waitForBuilds\(([^)]*)\)/g)) {
    for (const [i, group] of BUILD_ORDER.entries()) if (m[1]?.includes(`'${group}'`)) last = Math.max(last, i);
  }
  return last;
}
