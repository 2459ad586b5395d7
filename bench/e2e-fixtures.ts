import type { Knex } from 'knex';
import { createRepositories } from '../src/db/repositories.js';
import type { EndpointDestination } from '../src/domain/records.js';
import type { Infra } from './infra.js';

// The rows the real e2e runs start from: endpoints on the receiver and already stored events.

/** The stored events' type: what the filtered round's filter tests. */
export const E2E_EVENT_TYPE = 'invoice.paid';

/** A small invoice-like body, as a billing provider sends it: the fields the filter and the transform read. */
export const payloadOf = (externalId: string): string =>
  JSON.stringify({ id: externalId, type: E2E_EVENT_TYPE, amount: 2500, currency: 'eur', customer: 'cus_bench', created: 1764201600 });

/**
 * The filtered and the transformed rounds' endpoint (issue 33): a typical filter, true for every
 * stored event (so the same deliveries are made as in the plain round), and a five-field transform.
 */
export const BENCH_FILTER = "event.type.startsWith('invoice.') && event.data.amount >= 100";
export const BENCH_TRANSFORM =
  '{"kind": type, "invoice": data.id, "total": data.amount, "currency": $uppercase(data.currency), "customer": data.customer}';

/** What an endpoint of a run carries beside its URL: spec.filter, spec.transform.jsonata, or another destination than the receiver. */
export interface EndpointContent {
  filter?: string;
  transform?: string;
  /** spec.destination (Kafka, SQS, ...) with the address the row shows; absent: HTTP to the receiver */
  destination?: { to: EndpointDestination; address: string };
}

/** One source with `k` catch-all endpoints on the receiver, or on `content.destination` (defaults: POST, no auth, 5 attempts, 10 s). */
export async function seedEndpoints(
  infra: Infra,
  source: string,
  k: number,
  receiverUrl: string,
  content: EndpointContent = {},
): Promise<string[]> {
  const repos = createRepositories(infra.db);
  const ids: string[] = [];
  for (let i = 0; i < k; i++) {
    const e = await repos.endpoints.upsertByResourceUid(`bench:${source}:${i}`, {
      name: `${source}-${i}`,
      source,
      eventType: null,
      url: content.destination?.address ?? `${receiverUrl}/${source}/${i}`,
      method: 'POST',
      authType: 'NONE',
      authUsername: null,
      authSecret: null,
      signingSecret: null,
      previousSigningSecret: null,
      customHeaders: {},
      maxAttempts: 5,
      timeoutSeconds: 10,
      retryOnStatus: [],
      rateLimitPerSecond: null,
      maxConcurrency: null,
      active: true,
      autoDisableAfter: 0,
      ...(content.filter === undefined ? {} : { filter: content.filter }),
      ...(content.transform === undefined ? {} : { transform: content.transform }),
      ...(content.destination === undefined ? {} : { destination: content.destination.to }),
    });
    ids.push(e.id);
  }
  return ids;
}

/** Stored events as ingest leaves them (already published, so no sweeper would touch them). */
export async function insertEvents(infra: Infra, source: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 500) {
    const rows = Array.from({ length: Math.min(500, n - start) }, (_, i) => ({
      source,
      external_event_id: `${source}-${start + i}`,
      event_type: E2E_EVENT_TYPE,
      payload: Buffer.from(payloadOf(`${source}-${start + i}`)),
      content_type: 'application/json',
      headers: JSON.stringify({ 'content-type': 'application/json' }),
      published_at: infra.db.fn.now(),
    }));
    const inserted: Array<{ id: string }> = await infra.db('webhook_event').insert(rows).returning('id');
    ids.push(...inserted.map((r) => r.id));
  }
  return ids;
}

export async function countWhere(infra: Infra, sql: string, bindings: readonly Knex.RawBinding[]): Promise<number> {
  const res = await infra.db.raw<{ rows: Array<{ n: number }> }>(sql, bindings);
  return res.rows[0]?.n ?? 0;
}
