import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { createEventPublisher } from '../src/transport/publisher.js';
import { BARE_TASK_QUEUE, type BareFanoutWorkflow } from './bare-workflow.js';
import { cloudActionsOf, type CloudActions } from './cloud-actions.js';
import { continuationWorkflowId } from '../src/domain/ordering.js';
import type { BenchConfig } from './config.js';
import { cpuUsage, type CpuSnapshot } from './cpu.js';
import {
  BENCH_FILTER,
  BENCH_ORDERING_KEY,
  BENCH_TRANSFORM,
  countWhere,
  insertEvents,
  payloadOf,
  seedEndpoints,
  type EndpointContent,
} from './e2e-fixtures.js';
import type { Infra } from './infra.js';
import { FLAKY_PATH, TRACKED_PATH, type Receiver } from './receiver.js';
import { mapLimit, median } from './stats.js';

const RUN_TIMEOUT_MS = 180_000;
const POLL_MS = 50;

export interface E2eRun {
  events: number;
  deliveries: number;
  /** first publish (or start) to the last delivery done */
  seconds: number;
  deliveriesPerS: number;
  /** real path only: first publish to every event in its final status (finishEvent done) */
  eventsDoneS?: number;
  cpu: Record<string, number>;
  foreignCpuS: number;
  /** the whole measured window, s (the CPU above was spent in it) */
  wallS: number;
  /** the worker's garbage collection meanwhile, s (its nodejs_gc_duration_seconds), when deps.workerGcSeconds reads it */
  workerGcS?: number;
  /** real path, when asked: Temporal Cloud's Actions of a few of its finished workflows */
  actions?: CloudActions[];
  /** one ordered key: ms from each delivery's arrival at the receiver to the next one's */
  hopsMs?: number[];
  /** one ordered key: deliveries that arrived before one of an earlier event of the key (none, by the guarantee) */
  outOfOrder?: number;
  /** real path: deliveries that took more than one attempt (a retry is a timer, an activity task and a second send) */
  retried?: number;
  /** real path: the median attempt's duration, ms, as the attempt log has it (the send and its answer) */
  attemptMs?: number;
  /**
   * the measured window on the monotonic clock, microseconds: the clock of a V8 CPU profile's
   * timestamps, so bench/profile-summary.ts can keep one kind of run's samples (BENCH_PROFILE)
   */
  windowUs: [number, number];
}

/** Workflows whose histories are counted for Temporal Cloud's Actions, per counted run. */
const ACTIONS_SAMPLE = 3;
/**
 * The ordered runs' histories read, spread over the run: with many keys the first events of a run
 * are the first of their keys and never wait, so the first few would say 2 whatever the waiting
 * ones cost (docs/ordering.md counts 2 at once, 4 when waiting).
 */
const ORDERED_ACTIONS_SAMPLE = 30;

/** `n` of `ids` evenly spread from the first to the last. */
const spread = (ids: readonly string[], n: number): string[] =>
  ids.length <= n ? [...ids] : Array.from({ length: n }, (_, i) => ids[Math.floor((i * (ids.length - 1)) / (n - 1))] ?? '');

/** One path (real or bare) at one fan-out, over all rounds: medians, and CPU summed. */
export interface E2ePath {
  events: number;
  deliveries: number;
  seconds: number;
  deliveriesPerS: number;
  eventsDoneS?: number;
  runs: E2eRun[];
  /** over all rounds, like cpu */
  totalDeliveries: number;
  cpu: Record<string, number>;
  foreignCpuS: number;
  /** the worker's GC over all rounds, s, when read */
  workerGcS?: number;
  /** the Actions counted over all rounds (real path) */
  actions: CloudActions[];
  /** one ordered key: every hop of every round, ms; and the deliveries that came out of order */
  hopsMs: number[];
  outOfOrder: number;
  /** real path: deliveries that took more than one attempt, over all rounds */
  retried: number;
  /** real path: the rounds' median attempt duration, ms (their median) */
  attemptMs?: number;
}

export interface E2eCase {
  endpoints: number;
  real: E2ePath;
  bare: E2ePath;
  ratio: number;
}

export interface E2eBenchDeps {
  cfg: BenchConfig;
  infra: Infra;
  client: Client;
  receiver: Receiver;
  snapshot: () => CpuSnapshot;
  log: (line: string) => void;
  /** called between the warm-up and the measured rounds */
  afterWarmup?: () => void;
  /** the worker's GC seconds over its life so far (its /metrics); absent or undefined: not read */
  workerGcSeconds?: () => Promise<number | undefined>;
  /** the topic the real runs publish to, which the shape's starter reads; default the fanout topology's */
  topicArn?: string;
  /**
   * CPU groups renamed in each run's figures: the processes of the shape not measured are idle
   * meanwhile (`idle: other shape`), the other shape's own become `worker` and `consumer`
   */
  cpuGroups?: Readonly<Record<string, string>>;
}

/** The one-endpoint case run again beside the plain one: in the other shape, filtered, transformed, to other destinations. */
export interface E2eVariants {
  /** the deps of the other shape (its topic, its processes' CPU groups); absent: not run */
  otherShape?: E2eBenchDeps;
  /** the filtered and the transformed rounds */
  content?: boolean;
  /** the ordered rounds (issue 41): many keys, and one key's serial hops */
  ordered?: { keys: number; oneKeyEvents: number };
  /**
   * a Kafka topic's and an SQS queue's rounds (issue 43) beside an HTTP run of their own, after the
   * main rounds, `rounds` of them; absent: not run
   */
  destinations?: BenchDestinations & { rounds: number };
}

/** Where the destination rounds' endpoints send: a Kafka topic, an SQS queue. */
export interface BenchDestinations {
  kafka: NonNullable<EndpointContent['destination']>;
  sqs: NonNullable<EndpointContent['destination']>;
}

export interface E2eFigures {
  one: E2eCase;
  ten: E2eCase;
  floor: E2ePath;
  /** the one-endpoint case in the other shape (BENCH_E2E_SHAPES) */
  otherShape?: E2ePath;
  /** the one-endpoint case with BENCH_FILTER, and with BENCH_TRANSFORM, on the endpoint (BENCH_E2E_CONTENT) */
  filtered?: E2ePath;
  transformed?: E2ePath;
  /**
   * the one-endpoint case ordered by BENCH_ORDERING_KEY over `keys` customers, the same events as
   * the plain round; and one key alone, its deliveries one after the other (BENCH_E2E_ORDERED)
   */
  ordered?: { keys: number; many: E2ePath; oneKey: E2ePath };
  /**
   * the one-endpoint case to the receiver, to a Kafka topic and to an SQS queue, in rounds of their
   * own (BENCH_E2E_DESTINATIONS, BENCH_DESTINATION_ROUNDS): the runs of a round side by side, the
   * n-th run of each path from the same round
   */
  destinationHttp?: E2ePath;
  kafka?: E2ePath;
  sqs?: E2ePath;
}

/** Polls until done() or the timeout; returns the seconds since t0 at which done() held. */
async function waitUntil(t0: number, what: string, done: () => Promise<boolean> | boolean): Promise<number> {
  while (!(await done())) {
    if (performance.now() - t0 > RUN_TIMEOUT_MS) throw new Error(`timed out after ${RUN_TIMEOUT_MS} ms waiting for ${what}`);
    await sleep(POLL_MS);
  }
  return (performance.now() - t0) / 1000;
}

/** Runs one measured run and adds the CPU each component spent meanwhile. */
async function measured(d: E2eBenchDeps, body: () => Promise<Omit<E2eRun, 'cpu' | 'foreignCpuS' | 'wallS' | 'windowUs'>>): Promise<E2eRun> {
  const gcBefore = await d.workerGcSeconds?.();
  const before = d.snapshot();
  const fromUs = monotonicUs();
  const t0 = performance.now();
  const r = await body();
  const wallS = (performance.now() - t0) / 1000;
  const u = cpuUsage(before, d.snapshot());
  const windowUs: [number, number] = [fromUs, monotonicUs()];
  // read after the CPU snapshot: the scrape's own cost stays out of the figures
  const gcAfter = await d.workerGcSeconds?.();
  const workerGcS = gcBefore === undefined || gcAfter === undefined ? undefined : gcAfter - gcBefore;
  return {
    ...r,
    cpu: renamed(u.groups, d.cpuGroups ?? {}),
    foreignCpuS: u.foreignS,
    wallS,
    windowUs,
    ...(workerGcS === undefined ? {} : { workerGcS }),
  };
}

/** The monotonic clock in microseconds, as V8's CPU profiles time their samples (every process on the machine reads the same). */
function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** CPU seconds by group, the groups renamed (several may become one). */
function renamed(cpu: Record<string, number>, names: Readonly<Record<string, string>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [g, s] of Object.entries(cpu)) {
    const name = names[g] ?? g;
    out[name] = (out[name] ?? 0) + s;
  }
  return out;
}

/**
 * The real path: event ids published to SNS (as ingest does), the consumer starts one
 * WebhookFanoutWorkflow per event, the worker prepares, delivers and finishes. Done when every
 * delivery row is SUCCESS in Postgres; the time until every event is finished is noted too.
 */
export async function runReal(
  d: E2eBenchDeps,
  k: number,
  n: number,
  opts: {
    countActions?: boolean;
    content?: EndpointContent;
    /** the customers the events take turns over (the ordering key); absent: one */
    keys?: number;
    /** note each delivery's arrival and return the hops between them (one ordered key) */
    hops?: boolean;
    /** a destination round's run: its HTTP run answers at once and samples histories as the brokers' runs do */
    destinationRound?: boolean;
  } = {},
): Promise<E2eRun> {
  const c = opts.content;
  const kind = c?.destination
    ? `-${c.destination.to.type.toLowerCase()}`
    : c?.filter !== undefined
      ? '-filter'
      : c?.transform !== undefined
        ? '-transform'
        : c?.orderingKey !== undefined
          ? '-ordered'
          : '';
  const source = `bench-e2e-${k}${kind}-${randomBytes(3).toString('hex')}`;
  // BENCH_E2E_FAIL_FIRST: every delivery's first request is answered 503, its retry 200; the
  // tracked path notes when each one arrived
  const receiverUrl = opts.hops
    ? `${d.receiver.url}${TRACKED_PATH.replace(/\/$/, '')}`
    : d.cfg.e2eFailFirst && !opts.destinationRound
      ? `${d.receiver.url}${FLAKY_PATH.replace(/\/$/, '')}`
      : d.receiver.url;
  // a filter that refused an event, or a transform that failed, leaves a delivery short of SUCCESS: the run times out
  const endpointIds = await seedEndpoints(d.infra, source, k, receiverUrl, opts.content);
  const eventIds = await insertEvents(d.infra, source, n, opts.keys);
  // ingest's publisher: ids leave in PublishBatch calls, as they do from ingest
  const topicArn = d.topicArn ?? d.infra.fanoutTopology.topicArn;
  const publisher = createEventPublisher({ sns: d.infra.aws.sns, aws: d.infra.awsOptions, topicArn });
  const expected = n * k;
  try {
    const run = await measured(d, async () => {
      const t0 = performance.now();
      await mapLimit(eventIds, 20, (id) => publisher.publish(id));
      const seconds = await waitUntil(
        t0,
        `${expected} SUCCESS deliveries of ${source}`,
        async () =>
          (await countWhere(
            d.infra,
            `SELECT count(*)::int AS n FROM webhook_delivery WHERE endpoint_id = ANY(?::uuid[]) AND status = 'SUCCESS'`,
            [endpointIds],
          )) >= expected,
      );
      const eventsDoneS = await waitUntil(
        t0,
        `${n} finished events of ${source}`,
        async () =>
          (await countWhere(d.infra, `SELECT count(*)::int AS n FROM webhook_event WHERE source = ? AND status <> 'RECEIVED'`, [source])) >=
          n,
      );
      return { events: n, deliveries: expected, seconds, deliveriesPerS: expected / seconds, eventsDoneS };
    });
    if (opts.hops) Object.assign(run, await hopsOf(d.receiver, source, n));
    run.retried = await countWhere(
      d.infra,
      `SELECT count(*)::int AS n FROM webhook_delivery WHERE endpoint_id = ANY(?::uuid[]) AND attempts > 1`,
      [endpointIds],
    );
    // a slower answer holds each activity longer: the attempt log's own durations, to set beside the CPU
    run.attemptMs = await countWhere(
      d.infra,
      `SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duration_ms), 0)::float AS n
         FROM webhook_delivery_attempt a JOIN webhook_delivery w ON w.id = a.delivery_id WHERE w.endpoint_id = ANY(?::uuid[])`,
      [endpointIds],
    );
    // outside the measured window: reading histories costs the server CPU too (one workflow per event, its id the event's)
    if (!opts.countActions) return run;
    // an ordered run's and a destination's histories spread over the run (the first few may not be typical)
    const sample =
      opts.keys === undefined && c?.destination === undefined && !opts.destinationRound
        ? eventIds.slice(0, ACTIONS_SAMPLE)
        : spread(eventIds, ORDERED_ACTIONS_SAMPLE);
    // an ordered event's delivery left to its key's chain may have had a run of its own (a continuation)
    const continuations = async (eventId: string): Promise<string[]> => {
      if (opts.keys === undefined) return [];
      const res = await d.infra.db.raw<{ rows: Array<{ id: string }> }>('SELECT id FROM webhook_delivery WHERE event_id = ?', [eventId]);
      return res.rows.map((r) => continuationWorkflowId(eventId, r.id));
    };
    return { ...run, actions: await cloudActionsOf(d.client, sample, continuations) };
  } finally {
    await publisher.close();
  }
}

/**
 * One key's deliveries arrive one after the other, in the events' order (their external ids,
 * `<source>-<i>`): the time from each one's arrival to the next one's is what ordering adds to the
 * receiver's own latency per delivery (the bench's receiver answers at once). The hops are taken
 * in the order the deliveries arrived; a delivery that arrived before one of an earlier event is
 * counted (`outOfOrder`), not hidden: the guarantee says none does.
 */
async function hopsOf(receiver: Receiver, source: string, n: number): Promise<{ hopsMs: number[]; outOfOrder: number }> {
  const seen = await receiver.arrivedAt(Array.from({ length: n }, (_, i) => `${source}-${i}`));
  const at = seen.map((t, i) => {
    if (t === undefined) throw new Error(`${source}: delivery ${i} was not seen by the receiver`);
    return t;
  });
  const outOfOrder = at.filter((t, i) => i > 0 && t < Math.max(...at.slice(0, i))).length;
  const sorted = [...at].sort((a, b) => a - b);
  return { hopsMs: sorted.slice(1).map((t, i) => t - (sorted[i] ?? t)), outOfOrder };
}

/**
 * The bare baseline: the same number of workflows of the same shape (k concurrent POST
 * activities to the same receiver), started directly with the consumer's concurrency.
 * Done when every workflow has completed.
 */
export async function runBare(d: E2eBenchDeps, k: number, n: number): Promise<E2eRun> {
  const tag = `bare-${k}-${randomBytes(3).toString('hex')}`;
  const urls = Array.from({ length: k }, (_, i) => `${d.receiver.url}/${tag}/${i}`);
  const expected = n * k;
  const receivedBefore = await d.receiver.count();
  return measured(d, async () => {
    const seconds = await runBareWorkflows(d, tag, urls, n);
    const received = (await d.receiver.count()) - receivedBefore;
    if (received < expected) throw new Error(`bare run ${tag}: receiver saw ${received} of ${expected} requests`);
    return { events: n, deliveries: expected, seconds, deliveriesPerS: expected / seconds };
  });
}

/**
 * Temporal's floor: n bare workflows with no endpoint (no activity at all), started as the bare
 * path starts its own: what one workflow per event costs the server and a worker before any work.
 * Its "deliveries" are workflows, so the CPU per delivery of this path is per workflow.
 */
export async function runFloor(d: E2eBenchDeps, n: number): Promise<E2eRun> {
  const tag = `floor-${randomBytes(3).toString('hex')}`;
  return measured(d, async () => {
    const seconds = await runBareWorkflows(d, tag, [], n);
    return { events: n, deliveries: n, seconds, deliveriesPerS: n / seconds };
  });
}

/** Starts n BareFanoutWorkflow runs at the consumer's concurrency and waits for all; seconds taken. */
async function runBareWorkflows(d: E2eBenchDeps, tag: string, urls: string[], n: number): Promise<number> {
  const t0 = performance.now();
  const results: Array<Promise<number>> = [];
  await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    d.cfg.consumerConcurrency,
    async (i) => {
      const handle = await d.client.workflow.start<typeof BareFanoutWorkflow>('BareFanoutWorkflow', {
        taskQueue: BARE_TASK_QUEUE,
        workflowId: `${tag}-${i}`,
        args: [{ urls, body: payloadOf(`${tag}-${i}`) }],
      });
      results.push(handle.result());
    },
  );
  await Promise.all(results);
  return (performance.now() - t0) / 1000;
}

function combine(runs: E2eRun[]): E2ePath {
  const first = runs[0];
  if (!first) throw new Error('no runs');
  const cpu: Record<string, number> = {};
  for (const r of runs) for (const [g, v] of Object.entries(r.cpu)) cpu[g] = (cpu[g] ?? 0) + v;
  const done = runs.flatMap((r) => (r.eventsDoneS === undefined ? [] : [r.eventsDoneS]));
  return {
    events: first.events,
    deliveries: first.deliveries,
    seconds: median(runs.map((r) => r.seconds)),
    deliveriesPerS: median(runs.map((r) => r.deliveriesPerS)),
    ...(done.length > 0 ? { eventsDoneS: median(done) } : {}),
    runs,
    totalDeliveries: runs.reduce((a, r) => a + r.deliveries, 0),
    cpu,
    foreignCpuS: runs.reduce((a, r) => a + r.foreignCpuS, 0),
    ...(runs.every((r) => r.workerGcS !== undefined) ? { workerGcS: runs.reduce((a, r) => a + (r.workerGcS ?? 0), 0) } : {}),
    actions: runs.flatMap((r) => r.actions ?? []),
    hopsMs: runs.flatMap((r) => r.hopsMs ?? []),
    outOfOrder: runs.reduce((a, r) => a + (r.outOfOrder ?? 0), 0),
    retried: runs.reduce((a, r) => a + (r.retried ?? 0), 0),
    ...(runs.every((r) => r.attemptMs !== undefined) ? { attemptMs: median(runs.map((r) => r.attemptMs ?? 0)) } : {}),
  };
}

/**
 * Warm-up, then `rounds` rounds of the runs: 1 and 10 endpoints, real and bare, the empty workflow
 * of Temporal's floor, and beside the one-endpoint real run its variants (the other shape, a
 * filter, a transform, a Kafka topic and an SQS queue as the destination), the order mirrored every other round so drift on the machine hits the
 * runs alike. Figures are medians over the rounds, CPU summed.
 */
export async function runE2eBench(d: E2eBenchDeps, rounds: number, variants: E2eVariants = {}): Promise<E2eFigures> {
  const { cfg, log } = d;
  const other = variants.otherShape;
  const ordered: EndpointContent | undefined = variants.ordered && { orderingKey: BENCH_ORDERING_KEY };
  const destinations = variants.destinations;
  if (cfg.e2eWarmupEvents > 0) {
    log(`e2e: warming up with ${cfg.e2eWarmupEvents} events on each path`);
    await runReal(d, 1, cfg.e2eWarmupEvents);
    await runBare(d, 1, cfg.e2eWarmupEvents);
    if (other) await runReal(other, 1, cfg.e2eWarmupEvents);
    if (variants.content) {
      await runReal(d, 1, cfg.e2eWarmupEvents, { content: { filter: BENCH_FILTER } });
      await runReal(d, 1, cfg.e2eWarmupEvents, { content: { transform: BENCH_TRANSFORM } });
    }
    if (ordered) await runReal(d, 1, cfg.e2eWarmupEvents, { content: ordered, keys: variants.ordered?.keys });
    // the first send to a type loads its client (the AWS SDKs, Kafka's metadata): not in the measured rounds
    for (const to of destinations ? [destinations.kafka, destinations.sqs] : [])
      await runReal(d, 1, cfg.e2eWarmupEvents, { content: { destination: to } });
  }
  d.afterWarmup?.();
  const runs = {
    real1: [] as E2eRun[],
    other1: [] as E2eRun[],
    filter1: [] as E2eRun[],
    transform1: [] as E2eRun[],
    ordered1: [] as E2eRun[],
    orderedKey: [] as E2eRun[],
    bare1: [] as E2eRun[],
    real10: [] as E2eRun[],
    bare10: [] as E2eRun[],
    floor: [] as E2eRun[],
  };
  type Key = keyof typeof runs;
  // Temporal Cloud's Actions are counted from the first round's histories
  const plan: Partial<Record<Key, () => Promise<E2eRun>>> = {
    real1: () => runReal(d, 1, cfg.e2eEvents1, { countActions: runs.real1.length === 0 }),
    ...(other ? { other1: () => runReal(other, 1, cfg.e2eEvents1) } : {}),
    ...(variants.content
      ? {
          filter1: () => runReal(d, 1, cfg.e2eEvents1, { content: { filter: BENCH_FILTER } }),
          transform1: () => runReal(d, 1, cfg.e2eEvents1, { content: { transform: BENCH_TRANSFORM } }),
        }
      : {}),
    ...(ordered && variants.ordered
      ? {
          // the plain round's events and load, ordered per customer over `keys` customers
          ordered1: () =>
            runReal(d, 1, cfg.e2eEvents1, { content: ordered, keys: variants.ordered?.keys, countActions: runs.ordered1.length === 0 }),
          // one customer: every delivery waits for the one before it
          orderedKey: () =>
            runReal(d, 1, variants.ordered?.oneKeyEvents ?? 0, {
              content: ordered,
              keys: 1,
              hops: true,
              countActions: runs.orderedKey.length === 0,
            }),
        }
      : {}),
    bare1: () => runBare(d, 1, cfg.e2eEvents1),
    floor: () => runFloor(d, cfg.e2eEvents1),
    bare10: () => runBare(d, 10, cfg.e2eEvents10),
    real10: () => runReal(d, 10, cfg.e2eEvents10, { countActions: runs.real10.length === 0 }),
  };
  // the one-endpoint runs side by side first; each round runs the previous one's order backwards
  const forward = (
    ['real1', 'other1', 'filter1', 'transform1', 'ordered1', 'orderedKey', 'bare1', 'floor', 'bare10', 'real10'] as const
  ).filter((k) => plan[k] !== undefined);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? forward : [...forward].reverse();
    for (const key of order) {
      const run = plan[key];
      if (!run) continue;
      const r = await run();
      runs[key].push(r);
      log(
        `e2e: round ${round + 1}/${rounds} ${key.padEnd(10)} ${r.deliveriesPerS.toFixed(0)} deliveries/s (${r.deliveries} in ${r.seconds.toFixed(2)} s)`,
      );
    }
  }
  const byDestination = destinations && (await runDestinationRounds(d, destinations));
  const caseOf = (endpoints: number, real: E2eRun[], bare: E2eRun[]): E2eCase => {
    const r = combine(real);
    const b = combine(bare);
    return { endpoints, real: r, bare: b, ratio: r.deliveriesPerS / b.deliveriesPerS };
  };
  return {
    one: caseOf(1, runs.real1, runs.bare1),
    ten: caseOf(10, runs.real10, runs.bare10),
    floor: combine(runs.floor),
    ...(other ? { otherShape: combine(runs.other1) } : {}),
    ...(variants.content ? { filtered: combine(runs.filter1), transformed: combine(runs.transform1) } : {}),
    ...(variants.ordered
      ? { ordered: { keys: variants.ordered.keys, many: combine(runs.ordered1), oneKey: combine(runs.orderedKey) } }
      : {}),
    ...(byDestination
      ? { destinationHttp: combine(byDestination.http), kafka: combine(byDestination.kafka), sqs: combine(byDestination.sqs) }
      : {}),
  };
}

/**
 * The destination rounds (issue 43, item 7): HTTP, Kafka and SQS runs of the same events, each
 * round's three side by side and every other round backwards, so that each round gives one ratio
 * to HTTP taken under the same conditions, and the rounds' spread of ratios says how far one
 * reading can be trusted. Apart from the main rounds: nothing but the destination differs between
 * the runs of a round (the far side of each is a process of its own: the receiver, Kafka's JVM,
 * the queue's fauxqs).
 */
async function runDestinationRounds(
  d: E2eBenchDeps,
  destinations: BenchDestinations & { rounds: number },
): Promise<Record<'http' | 'kafka' | 'sqs', E2eRun[]>> {
  const { cfg, log } = d;
  const runs = { http: [] as E2eRun[], kafka: [] as E2eRun[], sqs: [] as E2eRun[] };
  // workflow tasks per event beside HTTP's, from the first round: a slower answer must not cost the run more tasks
  const plan = {
    // the rows differ only by destination: no first-request failure for HTTP alone (BENCH_E2E_FAIL_FIRST), one history sample
    http: () => runReal(d, 1, cfg.e2eEvents1, { destinationRound: true, countActions: runs.http.length === 0 }),
    kafka: () =>
      runReal(d, 1, cfg.e2eEvents1, {
        destinationRound: true,
        content: { destination: destinations.kafka },
        countActions: runs.kafka.length === 0,
      }),
    sqs: () =>
      runReal(d, 1, cfg.e2eEvents1, {
        destinationRound: true,
        content: { destination: destinations.sqs },
        countActions: runs.sqs.length === 0,
      }),
  };
  const forward = ['http', 'kafka', 'sqs'] as const;
  for (let round = 0; round < destinations.rounds; round++) {
    for (const key of round % 2 === 0 ? forward : [...forward].reverse()) {
      const r = await plan[key]();
      runs[key].push(r);
      log(
        `e2e: destination round ${round + 1}/${destinations.rounds} ${key.padEnd(5)} ${r.deliveriesPerS.toFixed(0)} deliveries/s (${r.deliveries} in ${r.seconds.toFixed(2)} s)`,
      );
    }
  }
  return runs;
}
