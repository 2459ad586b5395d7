import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../support/wait.js';
import { logLateEvents } from './late-events.js';
import { addOrderedEndpoint, expectKeysInOrder, type AcceptedByKey, type OrderedEndpoint } from './ordered-keys.js';
import { launch, log, restart, sigkill, timeToReady } from './processes.js';
import { sendUntilAccepted, settledWithin, startFaultStack, type FaultStack } from './stack.js';

/**
 * Ordered delivery (docs/ordering.md) under SIGKILL: the compiled build as separate processes
 * (ingest, the consumer, two workers), an endpoint ordered by `event.data.key`, a receiver that
 * answers 500 to a fifth of the requests. One sender per key sends its events one after another
 * (each waits for its 200: their order is the key's order) while the workers and the consumer are
 * killed mid-stream, a worker while it holds deliveries in flight, then both workers at once.
 * Then, per key: nothing lost (every accepted event SUCCESS, each once in the attempt log), in
 * order (the requests never go back), one request in flight at a time (a re-sent request after a
 * kill included). Ingest, Postgres and Temporal outages with an ordered endpoint: crash-recovery.
 */

const KEYS = Number(process.env.FAULTS_ORDERING_KEYS ?? 4);
const PER_KEY = Number(process.env.FAULTS_ORDERING_EVENTS_PER_KEY ?? 15);
const FAIL_RATE = 0.2;
const SETTLE_WITHIN_MS = 120_000;

describe('ordered delivery under SIGKILL of the workers and the consumer', () => {
  let stack: FaultStack;
  let ordered: OrderedEndpoint;

  beforeAll(async () => {
    stack = await startFaultStack('ordering');
    ordered = await addOrderedEndpoint(stack.repos, 'shop/ledger', FAIL_RATE);
    await stack.launch([
      ['ingest', 'ingest', stack.ingestEnv()],
      ['consumer', 'consumer', stack.consumerEnv()],
      ['worker-1', 'worker', stack.workerEnv()],
      ['worker-2', 'worker', stack.workerEnv()],
    ]);
  });

  afterAll(async () => {
    await ordered?.receiver.close();
    await stack?.stop();
  });

  it('per key: every accepted event delivered, in order, one request in flight, one SUCCESS each', async () => {
    const { db, procs } = stack;
    const keys = Array.from({ length: KEYS }, (_, i) => `customer-${i}`);
    const accepted: AcceptedByKey = new Map(keys.map((k) => [k, []]));
    const sending = Promise.all(
      keys.map(async (key) => {
        for (let seq = 0; seq < PER_KEY; seq++) {
          const eventId = await sendUntilAccepted(stack.ingestUrl, { id: `${key}-${seq}`, type: 'customer.updated', key, seq });
          accepted.get(key)!.push({ seq, eventId });
          await sleep(150);
        }
      }),
    );

    await sleep(1_500);
    log('ordering: SIGKILL worker-1 mid-stream');
    await restart(procs['worker-1']!);
    await sleep(1_000);
    log('ordering: SIGKILL the consumer');
    await restart(procs.consumer!);
    await sleep(1_000);
    log('ordering: SIGKILL worker-2 mid-stream');
    await restart(procs['worker-2']!);
    await sleep(1_000);
    log('ordering: SIGKILL both workers at once: no worker holds the keys in flight for a while');
    await sigkill(procs['worker-1']!);
    await sigkill(procs['worker-2']!);
    await sleep(2_000);
    launch(procs['worker-1']!);
    launch(procs['worker-2']!);
    await Promise.all([timeToReady(procs['worker-1']!), timeToReady(procs['worker-2']!)]);
    await sending;
    const lastFault = Date.now();
    const ids = [...accepted.values()].flatMap((list) => list.map((a) => a.eventId));
    expect(ids).toHaveLength(KEYS * PER_KEY);

    // nothing lost: every accepted event settles, its delivery SUCCESS
    const settled = await settledWithin(db, ids, lastFault, SETTLE_WITHIN_MS);
    log(`ordering: ${settled}/${ids.length} events settled ${Date.now() - lastFault} ms after the last fault`);
    if (settled !== ids.length) {
      await logLateEvents(db, ids, lastFault, log);
      for (const p of Object.values(procs)) log(`${p.name} said: ${p.tail.join('').slice(-1500)}`);
    }
    expect(settled).toBe(ids.length);
    const { requests, resent } = await expectKeysInOrder(db, ordered, accepted);
    log(`ordering: ${requests} requests for ${ids.length} events; 200s sent again after a kill: ${resent}`);
  });
});
