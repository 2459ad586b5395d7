import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { createFanoutStarter, type FanoutStarter } from '../../src/temporal/fanout-starter.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { freePort } from '../../src/dev/ports.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startReceiver, type RecordedRequest, type Receiver, type Reply } from '../support/receiver.js';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from './support/harness.js';
import { sleep } from '../support/wait.js';

// Per-endpoint limits (docs/limits.md) as a receiver sees them, with TWO worker processes (the
// CLI's `worker`, as deployed) on one task queue, Postgres and Temporal: a limit kept in one
// process's memory would let both send at the limit, and these assertions would fail. Every
// limited endpoint has maxAttempts 1: a wait that spent an endpoint attempt would FAIL it.

/** Most requests in flight at once, from arrival and answer times at the receiver. */
function maxInFlight(reqs: RecordedRequest[]): number {
  const edges = reqs.flatMap((r) => [
    { t: r.startedAt, d: 1 },
    { t: r.finishedAt ?? Number.POSITIVE_INFINITY, d: -1 },
  ]);
  // an answer and an arrival in the same millisecond: the answer first (it was sent before)
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let cur = 0;
  let max = 0;
  for (const e of edges) max = Math.max(max, (cur += e.d));
  return max;
}

/** Most requests that arrived within any window of windowMs (sliding, half-open). */
function maxInWindow(reqs: RecordedRequest[], windowMs = 1_000): number {
  const ts = reqs.map((r) => r.startedAt).sort((a, b) => a - b);
  let max = 0;
  for (let i = 0, j = 0; i < ts.length; i++) {
    while (ts[i]! - ts[j]! >= windowMs) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}

interface WorkerProcess {
  env: Record<string, string>;
  child: ChildProcess;
  output: string[];
  management: string;
}

/** `webhook-fanout worker` from the checkout, as an operator runs it. */
async function startWorker(env: Record<string, string>): Promise<WorkerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/cli.ts', 'worker'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', MANAGEMENT_PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (b: Buffer) => {
    output.push(b.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { env, child, output, management: `http://127.0.0.1:${port}` };
}

async function whenReady(w: WorkerProcess, ms = 90_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (w.child.exitCode !== null) throw new Error(`worker exited: ${w.output.join('').slice(-2000)}`);
    const ok = await fetch(`${w.management}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await sleep(250);
  }
  throw new Error(`worker not ready: ${w.output.join('').slice(-2000)}`);
}

/** A counter's sum over both workers' /metrics for the series with these labels. */
async function scraped(workers: WorkerProcess[], name: string, labels: Record<string, string>): Promise<number> {
  let sum = 0;
  for (const w of workers) {
    const text = await (await fetch(`${w.management}/metrics`)).text();
    for (const line of text.split('\n')) {
      const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
      if (!m || m[1] !== name) continue;
      const got = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
      if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[3]);
    }
  }
  return sum;
}

describe('per-endpoint rate and concurrency limits, two worker processes', () => {
  let database: TestDatabase;
  let repos: Repositories;
  let client: Client;
  let clientConnection: Connection;
  let start: FanoutStarter;
  const workers: WorkerProcess[] = [];
  const receivers: Receiver[] = [];

  const receiver = async (reply: (n: number) => Reply): Promise<Receiver> => {
    const r = await startReceiver((n) => reply(n));
    receivers.push(r);
    return r;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    repos = createRepositories(database.db);
    const address = inject('temporalAddress');
    const taskQueue = `limits-${randomUUID()}`;
    clientConnection = await Connection.connect({ address });
    client = new Client({ connection: clientConnection, namespace: 'default' });
    start = createFanoutStarter({ client, taskQueue, metrics: createMetrics({ defaultMetrics: false }), events: repos.events });
    const env = {
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
      DELIVERY_BACKOFF_INITIAL_MS: '50',
      DELIVERY_BACKOFF_MAX_MS: '5000',
    };
    workers.push(await startWorker(env), await startWorker(env));
    await Promise.all(workers.map((w) => whenReady(w)));
  });

  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    for (const r of receivers) await r.close();
    await clientConnection?.close();
    await database?.destroy();
  });

  async function runFanout(eventId: string): Promise<string> {
    await start(eventId);
    return client.workflow.getHandle(eventId).result() as Promise<string>;
  }

  /** n events of one source, fanned out at once; resolves with their ids once all are final */
  async function fanOut(source: string, n: number): Promise<string[]> {
    const ids = await Promise.all(Array.from({ length: n }, () => addEvent(repos, { source })));
    await Promise.all(ids.map((id) => runFanout(id)));
    return ids;
  }

  async function expectOneAttemptEach(eventIds: string[], endpointId: string): Promise<void> {
    for (const id of eventIds) {
      const d = await deliveryOf(repos, id, endpointId);
      expect(d).toMatchObject({ status: 'SUCCESS', attempts: 1 });
      const log = await database.db('webhook_delivery_attempt').where({ delivery_id: d.id });
      expect(log).toHaveLength(1);
    }
  }

  it('rateLimit.perSecond: at most that many requests start in any second, each delivered once, no attempt spent on waiting', async () => {
    const limited = await receiver(() => ({ status: 200, body: 'ok', delayMs: 20 }));
    const unlimited = await receiver(() => ({ status: 200, body: 'ok', delayMs: 20 }));
    const source = uniqueSource('rate');
    const endpointId = await addEndpoint(repos, { source, url: limited.url, name: 'rate-limited', maxAttempts: 1, rateLimitPerSecond: 5 });
    await addEndpoint(repos, { source, url: unlimited.url, name: 'rate-control', maxAttempts: 1 });

    const started = Date.now();
    const ids = await fanOut(source, 30);

    // the same load without a limit arrives as a burst: the measure can fail
    expect(maxInWindow(unlimited.requests)).toBeGreaterThan(2 * 5);
    expect(limited.requests).toHaveLength(30);
    // Postgres admits them 200 ms apart; between admission and arrival a loaded machine shifts a
    // request by up to a few hundred ms: a tolerance of 2 a second and of 2 over three seconds,
    // where ignoring the limit gives 30
    expect(maxInWindow(limited.requests, 1_000)).toBeLessThanOrEqual(5 + 2);
    expect(maxInWindow(limited.requests, 3_000)).toBeLessThanOrEqual(15 + 2);
    // 30 requests at 5 a second, the first at once: not before 29 intervals of 200 ms
    const first = Math.min(...limited.requests.map((r) => r.startedAt));
    const last = Math.max(...limited.requests.map((r) => r.startedAt));
    expect(last - first).toBeGreaterThanOrEqual(29 * 200 - 100);
    expect(Date.now() - started).toBeLessThan(30_000);
    await expectOneAttemptEach(ids, endpointId);
    // both processes ran deliveries that had to wait: the limit held across them, not in one
    for (const w of workers) {
      expect(await scraped([w], 'webhook_fanout_delivery_deferrals_total', { endpoint: 'rate-limited', reason: 'rate' })).toBeGreaterThan(
        0,
      );
    }
    expect(await scraped(workers, 'webhook_fanout_delivery_limit_wait_seconds_total', { endpoint: 'rate-limited' })).toBeGreaterThan(1);
  });

  it('maxConcurrency: never more requests in flight than that, across both workers', async () => {
    const limited = await receiver(() => ({ status: 200, body: 'ok', delayMs: 600 }));
    const unlimited = await receiver(() => ({ status: 200, body: 'ok', delayMs: 600 }));
    const source = uniqueSource('conc');
    const endpointId = await addEndpoint(repos, { source, url: limited.url, name: 'conc-limited', maxAttempts: 1, maxConcurrency: 3 });
    await addEndpoint(repos, { source, url: unlimited.url, name: 'conc-control', maxAttempts: 1 });

    const ids = await fanOut(source, 24);

    // the same load without a limit overlaps far more (on a loaded machine workflows start spread out)
    expect(maxInFlight(unlimited.requests)).toBeGreaterThan(2 * 3);
    expect(limited.requests).toHaveLength(24);
    expect(maxInFlight(limited.requests)).toBeLessThanOrEqual(3);
    // the limit is a ceiling, not one at a time
    expect(maxInFlight(limited.requests)).toBeGreaterThanOrEqual(2);
    await expectOneAttemptEach(ids, endpointId);
    expect(
      await scraped(workers, 'webhook_fanout_delivery_deferrals_total', { endpoint: 'conc-limited', reason: 'concurrency' }),
    ).toBeGreaterThan(0);
    // nothing is left holding a slot once every delivery is done
    expect(await database.db('webhook_endpoint_lease').where({ endpoint_id: endpointId })).toEqual([]);
  });

  it('both limits together hold on one endpoint', async () => {
    const limited = await receiver(() => ({ status: 200, body: 'ok', delayMs: 500 }));
    const source = uniqueSource('both');
    const endpointId = await addEndpoint(repos, {
      source,
      url: limited.url,
      name: 'both-limited',
      maxAttempts: 1,
      rateLimitPerSecond: 8,
      maxConcurrency: 2,
    });

    const ids = await fanOut(source, 16);

    expect(maxInFlight(limited.requests)).toBeLessThanOrEqual(2);
    // 2 in flight of 500 ms each: 4 a second at most, below the rate limit of 8
    expect(maxInWindow(limited.requests)).toBeLessThanOrEqual(4 + 2);
    await expectOneAttemptEach(ids, endpointId);
  });

  it('a 503 with Retry-After pauses every delivery to that endpoint for the time it asks, without spending their attempts', async () => {
    const r = await receiver((n) =>
      n === 0 ? { status: 503, body: 'busy', headers: { 'retry-after': '3' } } : { status: 200, body: 'ok' },
    );
    const source = uniqueSource('pause');
    // no limits configured: the pause applies to every endpoint
    const endpointId = await addEndpoint(repos, { source, url: r.url, name: 'pausing', maxAttempts: 3 });
    const firstEvent = await addEvent(repos, { source });
    const firstRun = runFanout(firstEvent);
    while (r.requests.length === 0) await sleep(20);
    const refusedAt = r.requests[0]!.startedAt;
    await sleep(200);

    // events received after the 503 wait for the pause too, though they never got one
    const others = await Promise.all(Array.from({ length: 5 }, () => addEvent(repos, { source })));
    const otherRuns = others.map((id) => runFanout(id));
    expect(await firstRun).toBe('COMPLETED');
    expect(await Promise.all(otherRuns)).toEqual(others.map(() => 'COMPLETED'));

    const after = r.requests.slice(1);
    expect(after).toHaveLength(6);
    // Retry-After: 3 (whole seconds; the pause starts when the answer is recorded)
    for (const q of after) expect(q.startedAt - refusedAt).toBeGreaterThanOrEqual(2_900);
    expect(await deliveryOf(repos, firstEvent, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 2 });
    await expectOneAttemptEach(others, endpointId);
    expect(
      await scraped(workers, 'webhook_fanout_delivery_deferrals_total', { endpoint: 'pausing', reason: 'retry_after' }),
    ).toBeGreaterThan(0);
  });

  it('a worker that died holding a concurrency slot gives it back when its lease expires', async () => {
    const source = uniqueSource('lease');
    const endpointId = await addEndpoint(repos, { source, url: 'http://127.0.0.1:9/none', name: 'lease', maxConcurrency: 1 });
    const [a, b] = await Promise.all([addEvent(repos, { source }), addEvent(repos, { source })]);
    const [da, db] = await Promise.all([repos.deliveries.prepareRun(a, a), repos.deliveries.prepareRun(b, b)]);
    const limits = { perSecond: null, maxConcurrency: 1 };
    // a takes the one slot and is never heard of again (SIGKILL): b waits until the lease ends
    expect(await repos.endpointLimits.admit(endpointId, da![0]!.delivery.id, limits, 1_000)).toEqual({ admitted: true });
    const blocked = await repos.endpointLimits.admit(endpointId, db![0]!.delivery.id, limits, 1_000);
    expect(blocked).toMatchObject({ admitted: false, reason: 'concurrency' });
    await sleep(1_100);
    expect(await repos.endpointLimits.admit(endpointId, db![0]!.delivery.id, limits, 1_000)).toEqual({ admitted: true });
  });

  it('turns of deliveries that stopped waiting (failed, cancelled) do not hold up newcomers', async () => {
    const source = uniqueSource('phantom');
    const endpointId = await addEndpoint(repos, { source, url: 'http://127.0.0.1:9/none', name: 'phantom' });
    const events = await Promise.all(Array.from({ length: 6 }, () => addEvent(repos, { source })));
    const ids = (await Promise.all(events.map((e) => repos.deliveries.prepareRun(e, e)))).map((d) => d![0]!.delivery.id);
    const limits = { perSecond: 1, maxConcurrency: null };
    expect(await repos.endpointLimits.admit(endpointId, ids[0]!, limits, 15_000)).toEqual({ admitted: true });
    // four queue behind it, a second apart...
    const waits = [];
    for (const id of ids.slice(1, 5)) waits.push(await repos.endpointLimits.admit(endpointId, id, limits, 15_000));
    expect(waits.map((w) => (w.admitted ? 0 : Math.round(w.waitMs / 1000)))).toEqual([1, 2, 3, 4]);
    // ...and never come back (their workflows were terminated; finishEvent failed them)
    await database.db('webhook_delivery').whereIn('id', ids.slice(1, 5)).update({ status: 'FAILED' });
    const newcomer = await repos.endpointLimits.admit(endpointId, ids[5]!, limits, 15_000);
    expect(newcomer).toMatchObject({ admitted: false, reason: 'rate' });
    expect(newcomer.admitted ? 0 : newcomer.waitMs).toBeLessThanOrEqual(1_000);
  });

  // last: it kills the workers of this file
  it('SIGKILL of the workers mid-request: the slot stays taken until the dead request is retried or its lease ends, then the next delivery goes', async () => {
    const r = await receiver((n) => (n === 0 ? { status: 200, body: 'late', delayMs: 60_000 } : { status: 200, body: 'ok' }));
    const source = uniqueSource('killed');
    // lease = timeoutSeconds + LEASE_MARGIN_MS = 20 s + 5 s: longer than a worker takes to start
    const endpointId = await addEndpoint(repos, {
      source,
      url: r.url,
      name: 'killed',
      maxConcurrency: 1,
      timeoutSeconds: 20,
      maxAttempts: 3,
    });
    const first = await addEvent(repos, { source });
    void runFanout(first).catch(() => undefined);
    while (r.requests.length === 0) await sleep(20);
    const firstStarted = r.requests[0]!.startedAt;
    // whichever worker sent it dies holding the slot, and so does the other
    for (const w of workers) {
      const exited = new Promise((res) => w.child.once('exit', res));
      w.child.kill('SIGKILL');
      await exited;
    }
    const second = await addEvent(repos, { source });
    const secondRun = runFanout(second);
    const restarted = await startWorker(workers[0]!.env);
    workers.push(restarted);
    await whenReady(restarted);

    expect(await secondRun).toBe('COMPLETED');
    const next = r.requests.find((q, i) => i > 0 && q.headers['x-webhook-event-id'] === second);
    expect(next).toBeDefined();
    // The dead request held the only slot. Its delivery's first attempt ran as a local activity, so
    // it is tried again when its workflow task times out, on the new worker, and takes its own slot
    // back (its lease is keyed by the delivery); the next delivery goes only once that retry has
    // been answered, or once the dead lease ended (25 s), whichever came first.
    const retried = r.requests.find((q, i) => i > 0 && q.headers['x-webhook-event-id'] === first);
    const slotFreeAt = Math.min(retried?.finishedAt ?? Number.POSITIVE_INFINITY, firstStarted + 24_500);
    expect(next!.startedAt).toBeGreaterThanOrEqual(slotFreeAt);
    // and never two live requests at once (the first one died with its worker)
    expect(maxInFlight(r.requests.slice(1))).toBeLessThanOrEqual(1);
    expect(await deliveryOf(repos, second, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });
});
