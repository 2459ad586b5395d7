import type { Db } from './knex.js';

/** A client address a source's Basic credential was proven from, and when (migration 088). */
export interface ProvenAddress {
  source: string;
  address: string;
  provenAt: Date;
}

/**
 * The (source, client address) pairs ingest has proven a credential from (ingest/proven-addresses.ts
 * keeps them in memory; docs/sources.md, "What wrong passwords may cost"). Nothing secret is
 * stored: no credential, nothing derived from a password. The retention job deletes the old rows
 * (db/retention-queries.ts).
 */
export function createProvenAddressRepository(db: Db) {
  return {
    /** Marks the pairs proven now, in one statement (a pair proven later elsewhere keeps its time). */
    async record(pairs: ReadonlyArray<{ source: string; address: string }>): Promise<void> {
      if (pairs.length === 0) return;
      await db.raw(
        `INSERT INTO webhook_proven_address (source, address, proven_at)
         SELECT DISTINCT source, address, now() FROM unnest(:sources::text[], :addresses::text[]) AS p(source, address)
         ON CONFLICT (source, address) DO UPDATE SET proven_at = excluded.proven_at
          WHERE webhook_proven_address.proven_at < excluded.proven_at`,
        { sources: pairs.map((p) => p.source), addresses: pairs.map((p) => p.address) },
      );
    },

    /** The pairs proven within the last maxAgeSeconds, at most `limit`, the most recent first. */
    async recent(maxAgeSeconds: number, limit: number): Promise<ProvenAddress[]> {
      const res = await db.raw<{ rows: Array<{ source: string; address: string; proven_at: Date }> }>(
        `SELECT source, address, proven_at FROM webhook_proven_address
          WHERE proven_at >= now() - make_interval(secs => :age)
          ORDER BY proven_at DESC
          LIMIT :limit`,
        { age: maxAgeSeconds, limit },
      );
      return res.rows.map((r) => ({ source: r.source, address: r.address, provenAt: r.proven_at }));
    },
  };
}

export type ProvenAddressRepository = ReturnType<typeof createProvenAddressRepository>;
