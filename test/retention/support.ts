import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/knex.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import type { RetentionSettings } from '../../src/config/settings.js';
import { createRetentionJob, RETENTION_OFF } from '../../src/retention/retention-job.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

export interface SeededDelivery {
  status: 'PENDING' | 'SUCCESS' | 'FAILED';
  /** held for a disabled endpoint (redrive_on_enable) */
  held?: boolean;
  /** an ordered delivery that FAILED and holds its key (ordering_blocked_at) */
  blockingKey?: boolean;
  attempts?: number;
  /** seconds since the delivery last changed; default: as old as the event */
  changedAgo?: number;
}

export interface SeededEvent {
  source: string;
  /** seconds since receipt */
  age: number;
  status?: 'RECEIVED' | 'COMPLETED' | 'PARTIAL' | 'FAILED';
  deliveries?: SeededDelivery[];
}

/** One endpoint to hang deliveries on (the endpoint's own state does not matter to retention). */
export async function seedEndpoint(db: Db, source = 'any'): Promise<string> {
  const [row] = (await db('webhook_endpoint')
    .insert({ name: `ep-${randomUUID().slice(0, 6)}`, source, url: 'http://127.0.0.1:9/x' })
    .returning('id')) as Array<{ id: string }>;
  if (!row) throw new Error('no endpoint');
  return row.id;
}

/** A fresh database with `endpoints` endpoints of source `any`: what each block of the retention tests works on. */
export async function databaseWithEndpoints(endpoints: number): Promise<{ t: TestDatabase; ep: string[] }> {
  const t = await createTestDatabase();
  const ep: string[] = [];
  for (let i = 0; i < endpoints; i++) ep.push(await seedEndpoint(t.db));
  return { t, ep };
}

/**
 * An event as it would be after `age` seconds: its receipt, last change and its deliveries' (with
 * their attempt log) backdated, as a year of traffic would have left them.
 */
export async function seedEvent(db: Db, endpointIds: string[], e: SeededEvent): Promise<string> {
  const [ev] = (await db('webhook_event')
    .insert({
      source: e.source,
      external_event_id: randomUUID(),
      payload: Buffer.from(JSON.stringify({ secret: 'card 4242' })),
      content_type: 'application/json',
      headers: JSON.stringify({ 'x-sender': 'acme' }),
      status: e.status ?? 'COMPLETED',
      published_at: db.raw(`now() - make_interval(secs => ?)`, [e.age]),
      received_at: db.raw(`now() - make_interval(secs => ?)`, [e.age]),
      updated_at: db.raw(`now() - make_interval(secs => ?)`, [e.age]),
    })
    .returning('id')) as Array<{ id: string }>;
  if (!ev) throw new Error('no event');
  for (const [i, d] of (e.deliveries ?? []).entries()) {
    const endpointId = endpointIds[i % endpointIds.length];
    const changedAgo = d.changedAgo ?? e.age;
    const [row] = (await db('webhook_delivery')
      .insert({
        event_id: ev.id,
        endpoint_id: endpointId,
        status: d.status,
        attempts: d.attempts ?? 1,
        redrive_on_enable: d.held ?? false,
        ...(d.blockingKey
          ? { ordering_position: 1, ordering_key: 'k', ordering_blocked_at: db.raw(`now() - make_interval(secs => ?)`, [changedAgo]) }
          : {}),
        created_at: db.raw(`now() - make_interval(secs => ?)`, [e.age]),
        updated_at: db.raw(`now() - make_interval(secs => ?)`, [changedAgo]),
      })
      .returning('id')) as Array<{ id: string }>;
    if (!row) throw new Error('no delivery');
    for (let a = 1; a <= (d.attempts ?? 1); a++) {
      await db('webhook_delivery_attempt').insert({
        delivery_id: row.id,
        attempt: a,
        outcome: a === (d.attempts ?? 1) ? (d.status === 'SUCCESS' ? 'SUCCESS' : 'FAILED') : 'RETRYING',
        started_at: db.raw(`now() - make_interval(secs => ?)`, [e.age]),
        duration_ms: 12,
        response_status: 500,
      });
    }
  }
  return ev.id;
}

export async function counts(db: Db): Promise<{ events: number; deliveries: number; attempts: number }> {
  const res = await db.raw<{ rows: Array<{ events: number; deliveries: number; attempts: number }> }>(
    `SELECT (SELECT count(*) FROM webhook_event) AS events, (SELECT count(*) FROM webhook_delivery) AS deliveries,
            (SELECT count(*) FROM webhook_delivery_attempt) AS attempts`,
  );
  const row = res.rows[0];
  if (!row) throw new Error('no counts');
  return row;
}

export async function exists(db: Db, eventId: string): Promise<boolean> {
  return (await db('webhook_event').where({ id: eventId }).first()) !== undefined;
}

export const DAY = 86_400;

/** The job as ingest builds it, with its own metrics and a quiet logger. */
export function retentionJob(db: Db, settings: Partial<RetentionSettings>, opts: { provenAddressMaxAgeSeconds?: number } = {}) {
  const metrics = createMetrics({ defaultMetrics: false });
  const job = createRetentionJob({
    db,
    metrics,
    logger: createLogger({ level: process.env.RETENTION_TEST_LOG ?? 'silent', name: 'retention-test' }),
    settings: { ...RETENTION_OFF, batchPauseMs: 0, ...settings },
    ...opts,
  });
  return { job, metrics };
}

/** A metric's value by labels, read from the registry as Prometheus would scrape it. */
export async function metricValue(
  metrics: ReturnType<typeof createMetrics>,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const m = await metrics.registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, want]) => String((x.labels as Record<string, unknown>)[k]) === want));
  return v?.value;
}
