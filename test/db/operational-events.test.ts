import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AttemptResult } from '../../src/db/deliveries.js';
import { createRepositories } from '../../src/db/repositories.js';
import { fileDatabase } from '../support/db.js';
import { addEndpoint, addEvent, endpointSpec, uniqueSource } from '../fanout/support/harness.js';

// Operational events (docs/operations-events.md) as Postgres holds them: each written by the
// statement or transaction of the change it reports, unpublished (the sweeper's outbox), once per
// change, with the subject's namespace that routing reads.

const OPS = 'webhook-fanout';

const failed = (over: Partial<AttemptResult> = {}): AttemptResult => ({
  status: 'FAILED',
  responseStatus: 503,
  responseBody: 'down',
  error: 'HTTP 503',
  startedAt: new Date(),
  durationMs: 12,
  ...over,
});

interface OpsRow {
  id: string;
  event_type: string;
  external_event_id: string;
  subject_namespace: string | null;
  published_at: Date | null;
  payload: Buffer;
}

describe('operational events in Postgres', () => {
  const t = fileDatabase();

  const opsRows = async (type: string, subjectId: string): Promise<Array<OpsRow & { data: Record<string, unknown> }>> => {
    const rows: OpsRow[] = await t.database
      .db('webhook_event')
      .where({ source: OPS, event_type: type })
      .andWhereRaw("convert_from(payload, 'UTF8') LIKE ?", [`%${subjectId}%`]);
    return rows.map((r) => ({ ...r, data: JSON.parse(r.payload.toString('utf8')) as Record<string, unknown> }));
  };

  /** an endpoint of namespace `ns` (row name ns/name, as the operator writes it) with one prepared delivery of a third party's event */
  async function prepared(opts: { ns: string; name: string; autoDisableAfter?: number; deliveries?: number }) {
    const source = uniqueSource('ops');
    const endpointId = await addEndpoint(t.repos, {
      source,
      url: 'http://192.0.2.1/',
      name: `${opts.ns}/${opts.name}`,
      namespace: opts.ns,
      autoDisableAfter: opts.autoDisableAfter ?? 0,
    });
    const ids: Array<{ deliveryId: string; eventId: string }> = [];
    for (let i = 0; i < (opts.deliveries ?? 1); i++) {
      const eventId = await addEvent(t.repos, { source, eventType: 'invoice.paid' });
      const rows = await t.repos.deliveries.prepareRun(eventId, eventId);
      ids.push({ deliveryId: rows![0]!.delivery.id, eventId });
    }
    return { source, endpointId, ids };
  }

  it('a delivery that ends FAILED records delivery.failed in the statement that settles it, once', async () => {
    const { source, endpointId, ids } = await prepared({ ns: 'payments', name: 'ledger' });
    const { deliveryId, eventId } = ids[0]!;
    await t.repos.deliveries.recordAttempt(deliveryId, failed({ status: 'PENDING' }));
    expect(await opsRows('delivery.failed', deliveryId)).toEqual([]); // a retry is not the end
    await t.repos.deliveries.recordAttempt(deliveryId, failed());
    await t.repos.deliveries.recordAttempt(deliveryId, failed()); // settled already: nothing
    const rows = await opsRows('delivery.failed', deliveryId);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row).toMatchObject({ subject_namespace: 'payments', published_at: null, external_event_id: `delivery.failed:${deliveryId}:2` });
    expect(row.data).toMatchObject({
      type: 'delivery.failed',
      subject: { kind: 'WebhookEndpoint', namespace: 'payments', name: 'ledger', adminApiPath: `/api/deliveries?endpointId=${endpointId}` },
      endpoint: { id: endpointId, namespace: 'payments', name: 'ledger', source },
      delivery: {
        id: deliveryId,
        eventId,
        source,
        eventType: 'invoice.paid',
        attempts: 2,
        lastStatus: 503,
        lastError: 'HTTP 503',
        adminApiPath: `/api/deliveries/${deliveryId}/attempts`,
      },
    });
    expect(Date.parse(row.data.occurredAt as string)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('the FAILED that disables an endpoint records endpoint.disabled once, beside each delivery.failed (several attempts in one statement)', async () => {
    const { endpointId, ids } = await prepared({ ns: 'payments', name: 'billing', autoDisableAfter: 2, deliveries: 3 });
    const settled = await t.repos.deliveries.recordAttempts(ids.map((d) => ({ id: d.deliveryId, result: failed() })));
    expect(settled.map((s) => s?.autoDisabled)).toEqual([false, true, false]);
    for (const d of ids) expect(await opsRows('delivery.failed', d.deliveryId)).toHaveLength(1);
    const disabled = await opsRows('endpoint.disabled', endpointId);
    expect(disabled).toHaveLength(1);
    expect(disabled[0]!.data).toMatchObject({
      type: 'endpoint.disabled',
      subject: { kind: 'WebhookEndpoint', namespace: 'payments', name: 'billing' },
      endpoint: { id: endpointId, name: 'billing' },
      // the run as the statement left it: the third FAILED counts too
      consecutiveFailures: 3,
      autoDisableAfter: 2,
      disabledBy: { deliveryId: ids[1]!.deliveryId },
    });
  });

  it('one attempt that disables records endpoint.disabled too; enabling records endpoint.enabled once', async () => {
    const { endpointId, ids } = await prepared({ ns: 'orders', name: 'shipping', autoDisableAfter: 1 });
    expect(await t.repos.deliveries.recordAttempt(ids[0]!.deliveryId, failed())).toEqual({ autoDisabled: true });
    expect(await opsRows('endpoint.disabled', endpointId)).toHaveLength(1);
    expect(await t.repos.endpoints.enable(endpointId)).toMatchObject({ wasDisabled: true });
    expect(await t.repos.endpoints.enable(endpointId)).toMatchObject({ wasDisabled: false });
    const enabled = await opsRows('endpoint.enabled', endpointId);
    expect(enabled).toHaveLength(1);
    expect(enabled[0]!.data).toMatchObject({ subject: { namespace: 'orders', name: 'shipping' }, enabledBy: 'api' });
  });

  it('a delivery held for the redrive (its endpoint disabled) is not a failure for good: no delivery.failed', async () => {
    const { ids } = await prepared({ ns: 'payments', name: 'held' });
    await t.repos.deliveries.recordAttempt(
      ids[0]!.deliveryId,
      failed({ responseStatus: null, error: 'endpoint disabled', durationMs: null, skipped: 'endpoint_disabled' }),
    );
    expect(await opsRows('delivery.failed', ids[0]!.deliveryId)).toEqual([]);
  });

  it('an operational event goes to its namespace and the platform namespaces only, and its own failed delivery raises nothing (no loops)', async () => {
    const repos = createRepositories(t.database.db, { operations: { source: OPS, platformNamespaces: ['platform'] } });
    const ns = `tenant-${randomUUID().slice(0, 6)}`;
    const mine = await addEndpoint(repos, { source: OPS, url: 'http://192.0.2.1/', name: `${ns}/ops`, namespace: ns });
    const other = await addEndpoint(repos, { source: OPS, url: 'http://192.0.2.1/', name: 'elsewhere/ops', namespace: 'elsewhere' });
    const platform = await addEndpoint(repos, { source: OPS, url: 'http://192.0.2.1/', name: 'platform/ops', namespace: 'platform' });
    const key = randomUUID();
    const subject = { kind: 'WebhookEndpoint' as const, namespace: ns, name: 'x', uid: null, adminApiPath: '/api/deliveries' };
    expect(await repos.operationalEvents.record({ type: 'ordering.key_blocked', key, subject, data: { orderingKey: 'k' } })).toBe(true);
    expect(await repos.operationalEvents.record({ type: 'ordering.key_blocked', key, subject })).toBe(false); // the same change
    const [event] = await t.database.db('webhook_event').where({ source: OPS, external_event_id: `ordering.key_blocked:${key}` });
    const rows = await repos.deliveries.prepareRun(event.id, event.id);
    expect(rows!.map((r) => r.endpoint.id).sort()).toEqual([mine, platform].sort());
    expect(rows!.map((r) => r.endpoint.id)).not.toContain(other);
    const toMine = rows!.find((r) => r.endpoint.id === mine)!.delivery.id;
    await repos.deliveries.recordAttempt(toMine, failed());
    expect(await opsRows('delivery.failed', toMine)).toEqual([]);
    expect(await t.database.db('webhook_delivery').where({ id: toMine }).first('status')).toEqual({ status: 'FAILED' });
  });

  it('an endpoint its source stops allowing records endpoint.not_allowed with the reason, once per change', async () => {
    const uid = `test:${randomUUID()}`;
    const spec = endpointSpec({ name: 'payments/thief', source: uniqueSource('denied'), url: 'http://192.0.2.1/', namespace: 'payments' });
    const saved = await t.repos.endpoints.upsertByResourceUid(uid, { ...spec, deniedReason: null });
    expect(await opsRows('endpoint.not_allowed', saved.id)).toEqual([]);
    await t.repos.endpoints.upsertByResourceUid(uid, { ...spec, deniedReason: 'NotAllowedBySource' }, 'not in its namespace');
    await t.repos.endpoints.upsertByResourceUid(uid, { ...spec, deniedReason: 'NotAllowedBySource' }, 'not in its namespace');
    const rows = await opsRows('endpoint.not_allowed', saved.id);
    expect(rows).toHaveLength(1);
    // a new endpoint applied a moment before its source's credential: nothing
    const early = await t.repos.endpoints.upsertByResourceUid(
      `test:${randomUUID()}`,
      { ...spec, deniedReason: 'SourceNotFound' },
      'no credential',
    );
    expect(await opsRows('endpoint.not_allowed', early.id)).toEqual([]);
    expect(rows[0]!.data).toMatchObject({
      subject: { kind: 'WebhookEndpoint', namespace: 'payments', name: 'thief', uid },
      reason: 'NotAllowedBySource',
      message: 'not in its namespace',
    });
  });
});
