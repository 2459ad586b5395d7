import Fastify from 'fastify';
import { createDb } from '../../src/db/knex.js';
import type { UnitConfig } from '../protocol.js';
import type { Unit } from './unit.js';

/** Created by run.ts before the servers start. */
export const BASELINE_TABLE_SQL = `CREATE TABLE IF NOT EXISTS bench_baseline (
  id bigserial PRIMARY KEY,
  body bytea NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * The floor ingest is compared with: the same fastify and the same knex pool on the same
 * Postgres, one route, one INSERT of the raw body. No auth, no idempotency, no publish.
 */
export async function startBaselineUnit(cfg: UnitConfig): Promise<Unit> {
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax });
  const app = Fastify({ bodyLimit: 1024 * 1024 });
  // raw bytes like ingest, so both pay the same body handling
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.post<{ Body: Buffer }>('/api/webhooks/:source', async (req, reply) => {
    await db.raw('INSERT INTO bench_baseline (body) VALUES (?)', [req.body]);
    return reply.code(200).send({ ok: true });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : null,
    async stop() {
      await app.close();
      await db.destroy();
    },
  };
}
