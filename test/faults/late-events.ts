import type { Db } from '../../src/db/knex.js';

interface Row {
  recv: number;
  prep: number | null;
  att: number | null;
  done: number | null;
  attempts: number | null;
}

/**
 * Where the time after the last fault went, for the events that took longer than 5 s after it
 * (or never finished): when they were received, when their workflow first ran prepare (their
 * deliveries' created_at), when they were last attempted and when they completed, in 5 s buckets
 * of seconds from the last fault. Tells a slow start (queue, sweeper, consumer) from a slow run
 * (worker, Temporal, backoff) when the suite fails.
 */
export async function logLateEvents(db: Db, ids: string[], lastFault: number, log: (m: string) => void): Promise<void> {
  const t0 = new Date(lastFault).toISOString();
  const res = await db.raw<{ rows: Row[] }>(
    `select extract(epoch from (e.received_at - ?::timestamptz)) as recv,
            extract(epoch from (min(d.created_at) - ?::timestamptz)) as prep,
            extract(epoch from (max(d.last_attempt_at) - ?::timestamptz)) as att,
            extract(epoch from (e.completed_at - ?::timestamptz)) as done,
            max(d.attempts) as attempts
       from webhook_event e left join webhook_delivery d on d.event_id = e.id
      where e.id = any(?) group by e.id`,
    [t0, t0, t0, t0, ids],
  );
  const late = res.rows.filter((r) => r.done === null || Number(r.done) > 5);
  const histogram = (value: (r: Row) => number | null, bucketS: number): string => {
    const counts = new Map<string, number>();
    for (const r of late) {
      const v = value(r);
      const key = v === null ? 'none' : String(Math.floor(Number(v) / bucketS) * bucketS);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts.entries()]
      .sort((a, b) => (a[0] === 'none' ? 1 : b[0] === 'none' ? -1 : Number(a[0]) - Number(b[0])))
      .map(([k, n]) => `${k}:${n}`)
      .join(' ');
  };
  log(
    `${late.length} of ${res.rows.length} events finished more than 5 s after the last fault (or not at all); s from the last fault -> count`,
  );
  log(`  received (10 s buckets): ${histogram((r) => r.recv, 10)}`);
  log(`  first prepare: ${histogram((r) => r.prep, 5)}`);
  log(`  last attempt: ${histogram((r) => r.att, 5)}`);
  log(`  completed: ${histogram((r) => r.done, 5)}`);
  log(`  most attempts of a delivery: ${histogram((r) => r.attempts, 1)}`);
}
