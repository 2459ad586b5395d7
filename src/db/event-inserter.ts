import { randomUUID } from 'node:crypto';
import type { EventRepository, InsertedEvent, NewEvent } from './events.js';
import type { Db } from './knex.js';

interface Waiting {
  id: string;
  event: NewEvent;
  resolve: (r: InsertedEvent) => void;
  reject: (err: unknown) => void;
}

/**
 * Inserts events with natural batching (group commit): while `maxInFlight` statements run, new
 * events queue and then go in one multi-row INSERT. One statement per request was the largest CPU
 * cost left in ingest (socket writes of the pg client). Idempotency holds as before: ON CONFLICT
 * DO NOTHING on the partial unique index, also between rows of the same batch; every row not
 * inserted is a duplicate whose original is read back. A batch that fails is retried row by row,
 * so one bad row can not fail its neighbours.
 */
export function createBatchingEventInserter(
  db: Db,
  fallback: Pick<EventRepository, 'insertOrGetDuplicate'>,
  opts: { maxBatch?: number; maxInFlight?: number } = {},
): (e: NewEvent) => Promise<InsertedEvent> {
  const maxBatch = opts.maxBatch ?? 50;
  const maxInFlight = opts.maxInFlight ?? 4;
  const pending: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;

  async function insertBatch(batch: Waiting[]): Promise<void> {
    const values = batch.map(() => '(?::uuid, ?, ?, ?, ?, ?, ?::jsonb, ?, now())').join(', ');
    const bindings = batch.flatMap((w) => [
      w.id,
      w.event.source,
      w.event.externalEventId,
      w.event.eventType,
      w.event.payload,
      w.event.contentType,
      JSON.stringify(w.event.headers),
      w.event.traceparent ?? null,
    ]);
    const inserted = await db.raw<{ rows: Array<{ id: string }> }>(
      `INSERT INTO webhook_event (id, source, external_event_id, event_type, payload, content_type, headers, traceparent, published_at)
       VALUES ${values}
       ON CONFLICT (source, external_event_id) WHERE external_event_id IS NOT NULL DO NOTHING
       RETURNING id`,
      bindings,
    );
    const won = new Set(inserted.rows.map((r) => r.id));
    const now = new Date();
    const duplicates = batch.filter((w) => !won.has(w.id));
    for (const w of batch) if (won.has(w.id)) w.resolve({ id: w.id, duplicate: false, publishedAt: now, started: false });
    if (duplicates.length === 0) return;

    // a row is skipped only for a conflict, so it has an external id and an original
    const keys = duplicates.map((w) => [w.event.source, w.event.externalEventId] as const);
    const originals = await db.raw<{
      rows: Array<{ id: string; source: string; external_event_id: string; published_at: Date | null; workflow_id: string | null }>;
    }>(
      `SELECT id, source, external_event_id, published_at, workflow_id FROM webhook_event
       WHERE (source, external_event_id) IN (${keys.map(() => '(?, ?)').join(', ')})`,
      keys.flat(),
    );
    const byKey = new Map(originals.rows.map((r) => [`${r.source}\0${r.external_event_id}`, r]));
    for (const w of duplicates) {
      const o = byKey.get(`${w.event.source}\0${w.event.externalEventId ?? ''}`);
      if (o) w.resolve({ id: o.id, duplicate: true, publishedAt: o.published_at, started: o.workflow_id !== null });
      else w.reject(new Error('duplicate event vanished between insert and select'));
    }
  }

  async function runBatch(batch: Waiting[]): Promise<void> {
    try {
      await insertBatch(batch);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // isolate the row that failed (or fail each one alone if Postgres is down)
      await Promise.all(batch.map((w) => fallback.insertOrGetDuplicate(w.event).then(w.resolve, w.reject)));
    }
  }

  function run(): void {
    scheduled = false;
    while (pending.length > 0 && inFlight < maxInFlight) {
      const batch = pending.splice(0, maxBatch);
      inFlight++;
      void runBatch(batch).finally(() => {
        inFlight--;
        if (pending.length > 0 && !scheduled) run();
      });
    }
  }

  return (event) =>
    new Promise<InsertedEvent>((resolve, reject) => {
      pending.push({ id: randomUUID(), event, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(run);
      }
    });
}
