// What the filtered and transformed rounds' expressions cost on their own, in this process, with
// the code the worker runs (src/content): the whole pipeline's difference between a filtered and a
// plain round is a few hundredths of a millisecond against a run-to-run noise of tenths, so the
// bench prints this figure beside it. Per delivery as the worker pays it: the event's view (its
// payload parsed) and one evaluation of an expression compiled once (the worker's expression cache).
import { contentEvent, type StoredEventFields } from '../src/content/event-view.js';
import { compileFilter } from '../src/content/filter.js';
import { compileTransform } from '../src/content/transform.js';
import { BENCH_FILTER, BENCH_TRANSFORM, E2E_EVENT_TYPE, payloadOf } from './e2e-fixtures.js';

export interface ContentCost {
  /** CPU ms per delivery: the event's view and the filter's evaluation */
  filterMs: number;
  /** CPU ms per delivery: the event's view, the transform's evaluation and its body as bytes */
  transformMs: number;
  /** CPU ms of the first compile of each (the worker compiles an expression once per text) */
  filterCompileMs: number;
  transformCompileMs: number;
  iterations: number;
}

const cpuMs = (since: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

const storedEvent = (i: number): StoredEventFields => ({
  source: 'bench-content',
  eventType: E2E_EVENT_TYPE,
  externalEventId: `bench-content-${i}`,
  receivedAt: new Date(),
  headers: { 'content-type': 'application/json', 'user-agent': 'bench' },
  payload: Buffer.from(payloadOf(`bench-content-${i}`)),
});

/** `iterations` evaluations of each, in alternating blocks after a warm-up; CPU of this process. */
export async function measureContentCost(iterations = 20_000, blocks = 4): Promise<ContentCost> {
  let t = process.cpuUsage();
  const filter = compileFilter(BENCH_FILTER);
  const filterCompileMs = cpuMs(t);
  t = process.cpuUsage();
  const transform = compileTransform(BENCH_TRANSFORM);
  const transformCompileMs = cpuMs(t);
  if (!filter.ok || !transform.ok) throw new Error('the bench filter or transform does not compile');
  const events = Array.from({ length: 100 }, (_, i) => storedEvent(i));
  const runFilter = (n: number): void => {
    for (let i = 0; i < n; i++) {
      const out = filter.value.evaluate(contentEvent(events[i % events.length] as StoredEventFields));
      if (!('matched' in out) || !out.matched) throw new Error(`the bench filter did not match: ${JSON.stringify(out)}`);
    }
  };
  const runTransform = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const out = await transform.value.apply(contentEvent(events[i % events.length] as StoredEventFields));
      // past the wall-clock limit on a starved machine: the worker retries it, so does the bench
      if ('retryable' in out) i--;
      else if (!('body' in out)) throw new Error(`the bench transform failed: ${out.error}`);
    }
  };
  runFilter(2_000);
  await runTransform(2_000);
  let filterMs = 0;
  let transformMs = 0;
  const perBlock = Math.ceil(iterations / blocks);
  for (let b = 0; b < blocks; b++) {
    t = process.cpuUsage();
    runFilter(perBlock);
    filterMs += cpuMs(t);
    t = process.cpuUsage();
    await runTransform(perBlock);
    transformMs += cpuMs(t);
  }
  const n = perBlock * blocks;
  return { filterMs: filterMs / n, transformMs: transformMs / n, filterCompileMs, transformCompileMs, iterations: n };
}
