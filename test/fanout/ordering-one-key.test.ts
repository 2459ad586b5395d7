import { describe, expect } from 'vitest';
import type { RecordedRequest } from '../support/receiver.js';
import { addEndpoint, addEvent, finishedEvents, uniqueSource, type FanoutHarness } from './support/harness.js';
import { it } from './support/fixtures.js';

// One key with many events (issue 41 asks for 10 000): every one delivered once, in order, one
// request at a time; and how long the key takes from one delivery's end to the next one's start
// (its hop), which bounds a key's throughput. ORDERING_ONE_KEY_EVENTS sets the size: 200 by
// default (a few minutes on a loaded 2-core machine), 10000 for the run (docs/ordering.md,
// "How fast a key moves", says what to run and what it printed).

const EVENTS = Number(process.env.ORDERING_ONE_KEY_EVENTS ?? 200);
/** hops whose way through Temporal is read from the histories (each costs two history fetches) */
const TRACED_HOPS = 30;
/** runs started at once: in order, a few at a time, as a queue consumer starts them */
const START_BATCH = 20;

const seqOf = (r: RecordedRequest): number => (JSON.parse(r.body.toString('utf8')) as { seq: number }).seq;

interface HistoryTime {
  seconds?: unknown;
  nanos?: number | null;
}
/** A history event's time in epoch ms (the dev server runs on this machine: its clock is ours). */
const ms = (t: HistoryTime | null | undefined): number => Number(String(t?.seconds ?? 0)) * 1000 + (t?.nanos ?? 0) / 1e6;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}
const summary = (name: string, values: number[]): string => {
  const s = [...values].sort((a, b) => a - b);
  const f = (v: number) => `${Math.round(v)}`;
  return `${name}: p50 ${f(percentile(s, 50))} ms, p95 ${f(percentile(s, 95))} ms, max ${f(s.at(-1) ?? NaN)} ms`;
};

/**
 * Where a hop's time goes, from the waiting run's history. A run whose delivery was handed off
 * (docs/ordering.md, "The handoff": no `deliver` of its own) had its request made by the
 * activity that released the key: its hop is that activity's release, claim and attempt. Else:
 * the predecessor's answer -> the orderingTurn signal in the waiting run's history (the
 * predecessor's release and its signal) -> the waiting run's workflow task started on the worker
 * (Temporal's dispatch) -> its request at the receiver (the turn check, the attempt's rows, the
 * request).
 */
async function hopParts(h: FanoutHarness, runOf: string, previous: RecordedRequest, next: RecordedRequest) {
  const history = await h.client.workflow.getHandle(runOf).fetchHistory();
  const events = history.events ?? [];
  const handedOff = !events.some((e) => {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    return data !== undefined && data !== null && Buffer.from(data).toString('utf8').includes('"activity_type":"deliver"');
  });
  if (handedOff) return { handedOff: next.startedAt - previous.finishedAt! };
  // the signal that let it go: the last before its request (an earlier one woke it to find its
  // turn not come yet: prepare's wake-up of a later event, a re-check)
  const signalled = events.findLastIndex((e) => e.workflowExecutionSignaledEventAttributes && ms(e.eventTime) <= next.startedAt);
  if (signalled < 0) return undefined; // its turn came at once (prepared after its predecessor ended)
  const taskStarted = events.slice(signalled).find((e) => e.workflowTaskStartedEventAttributes);
  const signalAt = ms(events[signalled]!.eventTime);
  const taskAt = ms(taskStarted?.eventTime);
  return {
    releaseAndSignal: signalAt - previous.finishedAt!,
    dispatch: taskAt - signalAt,
    turnAndRequest: next.startedAt - taskAt,
  };
}

describe('one ordered key with many events', () => {
  it(`${EVENTS} events on one key: each once, in order, one request at a time; the hop from one to the next is measured`, async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('onekey');
    const target = await receiver([{ status: 200 }]);
    await addEndpoint(h.repos, { source, url: target.url, ordering: { key: 'event.data.key', onFailure: 'Block' } });
    const ids: string[] = [];
    for (let seq = 0; seq < EVENTS; seq++) ids.push(await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'k', seq }) }));
    const began = Date.now();
    for (let i = 0; i < ids.length; i += START_BATCH) await Promise.all(ids.slice(i, i + START_BATCH).map((id) => h.start(id)));
    // the events' runs end after prepare, the key's chain delivers them: every event finished
    await finishedEvents(h, ids, 3_600_000);
    const took = Date.now() - began;

    const requests = [...target.requests].sort((a, b) => a.startedAt - b.startedAt);
    expect(requests.map(seqOf)).toEqual(ids.map((_, seq) => seq));
    const hops: number[] = [];
    for (let i = 1; i < requests.length; i++) {
      const previous = requests[i - 1]!;
      expect(previous.finishedAt, `request ${i - 1} answered`).toBeDefined();
      // one request in flight: the next starts after the one before was answered
      expect(requests[i]!.startedAt).toBeGreaterThanOrEqual(previous.finishedAt!);
      hops.push(requests[i]!.startedAt - previous.finishedAt!);
    }

    const parts = { handedOff: [] as number[], releaseAndSignal: [] as number[], dispatch: [] as number[], turnAndRequest: [] as number[] };
    const step = Math.max(1, Math.floor(requests.length / TRACED_HOPS));
    for (let i = step; i < requests.length; i += step) {
      const p = await hopParts(h, ids[i]!, requests[i - 1]!, requests[i]!);
      if (!p) continue;
      if (p.handedOff !== undefined) {
        parts.handedOff.push(p.handedOff);
        continue;
      }
      parts.releaseAndSignal.push(p.releaseAndSignal);
      parts.dispatch.push(p.dispatch);
      parts.turnAndRequest.push(p.turnAndRequest);
    }
    console.log(
      [
        `one key, ${EVENTS} events: ${took} ms from the first start to the last result, ${((EVENTS * 1000) / took).toFixed(1)} deliveries/s`,
        summary('hop (an answer to the next request, at the receiver)', hops),
        `of ${parts.handedOff.length + parts.dispatch.length} hops read from the histories, ${parts.handedOff.length} handed off:`,
        `  ${summary("handed off (the releasing activity's release, claim and attempt)", parts.handedOff)}`,
        `  ${parts.dispatch.length} through a signal:`,
        `  ${summary("the predecessor's release and signal (answer -> signal in the waiting run's history)", parts.releaseAndSignal)}`,
        `  ${summary("Temporal's dispatch (signal -> workflow task started)", parts.dispatch)}`,
        `  ${summary('the turn check and the attempt (task started -> request)', parts.turnAndRequest)}`,
      ].join('\n'),
    );
  }, 3_600_000);
});
