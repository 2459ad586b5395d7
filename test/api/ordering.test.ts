import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { addEndpoint, addEvent, deliveryOf, finishedEvents, uniqueSource } from '../fanout/support/harness.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';

// Ordered delivery's poison event through the admin API (docs/ordering.md): a FAILED delivery
// holds its key under Block, the ones behind it say what they wait behind, and a replay or a skip
// unblocks it. Real Temporal worker, real receiver, real identity provider.

interface ApiDelivery {
  id: string;
  status: string;
  ordering: { key: string | null; position: number; skipped: boolean; waitingBehind: string | null } | null;
}

const seqOf = (r: RecordedRequest): number => (JSON.parse(r.body.toString('utf8')) as { seq: number }).seq;

describe('admin API: an ordered key blocked by a FAILED delivery', () => {
  let h: AdminHarness;
  let token: string;
  const runs = (ids: string[]) => finishedEvents(h.fanout, ids, 30_000);

  beforeAll(async () => {
    h = await startAdminHarness();
    token = await h.token('admin');
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Three events of one sequence; the first is refused (a 4xx, final), the others wait behind it. */
  async function blockedKey() {
    const source = uniqueSource('ordered');
    const target = await h.receiver((n) => ({ status: n === 0 ? 422 : 200 }));
    const endpointId = await addEndpoint(h.fanout.repos, {
      source,
      url: target.url,
      maxAttempts: 1,
      ordering: { key: null, onFailure: 'Block' },
    });
    const events: string[] = [];
    for (const seq of [1, 2, 3]) events.push(await addEvent(h.fanout.repos, { source, payload: JSON.stringify({ seq }) }));
    await Promise.all(events.map((id) => h.fanout.start(id)));
    const [d1, d2, d3] = await Promise.all(
      events.map((id) => eventually(() => deliveryOf(h.fanout.repos, id, endpointId).catch(() => undefined))),
    );
    const view = async (id: string) => (await h.get(`/api/deliveries/${id}`, token)).json() as ApiDelivery;
    // the first FAILED, the others waiting, each behind the one before it
    await eventually(async () => (await view(d1!.id)).status === 'FAILED');
    await eventually(async () => (await view(d3!.id)).ordering?.waitingBehind === d2!.id, { timeoutMs: 20_000 });
    await eventually(async () => (await view(d2!.id)).ordering?.waitingBehind === d1!.id, { timeoutMs: 20_000 });
    expect(await view(d2!.id)).toMatchObject({ status: 'PENDING', ordering: { key: '', skipped: false, waitingBehind: d1!.id } });
    expect(target.requests.map(seqOf)).toEqual([1]);
    return { target, events, ids: [d1!.id, d2!.id, d3!.id], view };
  }

  it('a replay of the FAILED delivery goes first, then the rest of the key in order', async () => {
    const { target, events, ids, view } = await blockedKey();
    const res = await h.post(`/api/deliveries/${ids[0]}/replay`, token);
    expect(res.status, res.text).toBe(202);
    await runs(events.slice(1));
    expect(target.requests.map(seqOf)).toEqual([1, 1, 2, 3]);
    expect(target.requests.every((r) => r.headers['x-webhook-out-of-order'] === undefined)).toBe(true);
    expect((await view(ids[0]!)).status).toBe('SUCCESS');
  }, 120_000);

  it('a skip unblocks the key: the next ones go in order, the skipped one stays FAILED and a replay of it is sent out of order, marked', async () => {
    const { target, events, ids, view } = await blockedKey();
    const skipped = await h.post(`/api/deliveries/${ids[0]}/skip`, token);
    expect(skipped.status, skipped.text).toBe(200);
    expect(skipped.json()).toMatchObject({ id: ids[0], status: 'FAILED', ordering: { skipped: true, waitingBehind: null } });
    await runs(events.slice(1));
    expect(target.requests.map(seqOf)).toEqual([1, 2, 3]);

    // skipped twice, or a delivery that did not fail: nothing to skip
    expect((await h.post(`/api/deliveries/${ids[0]}/skip`, token)).status).toBe(409);
    const notFailed = await h.post(`/api/deliveries/${ids[1]}/skip`, token);
    expect(notFailed.status).toBe(409);
    expect(notFailed.json()).toMatchObject({ code: 'not_skippable' });
    // a token without the replay permission may not skip
    expect((await h.post(`/api/deliveries/${ids[0]}/skip`, await h.token('reader'))).status).toBe(403);

    const replayed = await h.post(`/api/deliveries/${ids[0]}/replay`, token);
    expect(replayed.status, replayed.text).toBe(202);
    await h.fanout.client.workflow.getHandle((replayed.json() as { replay: { workflowId: string } }).replay.workflowId).result();
    expect(target.requests.map(seqOf)).toEqual([1, 2, 3, 1]);
    expect(target.requests.at(-1)?.headers['x-webhook-out-of-order']).toBe('true');
    expect((await view(ids[0]!)).status).toBe('SUCCESS');
  }, 120_000);
});
