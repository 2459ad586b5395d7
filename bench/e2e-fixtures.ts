import type { Knex } from 'knex';
import { createRepositories } from '../src/db/repositories.js';
import type { Infra } from './infra.js';

// The rows the real e2e runs start from: endpoints on the receiver and already stored events.

export const payloadOf = (externalId: string): string => JSON.stringify({ id: externalId, type: 'bench' });

/** One source with `k` catch-all endpoints on the receiver (defaults: POST, no auth, 5 attempts, 10 s). */
export async function seedEndpoints(infra: Infra, source: string, k: number, receiverUrl: string): Promise<string[]> {
  const repos = createRepositories(infra.db);
  const ids: string[] = [];
  for (let i = 0; i < k; i++) {
    const e = await repos.endpoints.upsertByResourceUid(`bench:${source}:${i}`, {
      name: `${source}-${i}`,
      source,
      eventType: null,
      url: `${receiverUrl}/${source}/${i}`,
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
      event_type: 'bench',
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
