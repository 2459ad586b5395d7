import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrateConfig } from '../../src/config/config.js';
import { createDb } from '../../src/db/knex.js';
import { startEmbeddedPostgres, type LocalPostgres } from '../../src/dev/embedded-postgres.js';
import { createTestPki, keyForPostgres, type TestPki } from '../support/certs.js';
import { cli } from '../support/cli.js';
import { sleep } from '../support/wait.js';

/**
 * A Postgres that takes TLS connections only (ssl=on, hostssl rules alone in its hba file), with a
 * certificate from a CA made here: what a managed Postgres with a private CA looks like to the
 * processes. Everything goes through the processes' own configuration (DATABASE_SSL_MODE,
 * DATABASE_CA_FILE) and createDb.
 */
let pki: TestPki;
let pg: LocalPostgres;

beforeAll(async () => {
  pki = createTestPki('postgres');
  // the name only, no IP: verify-full to 127.0.0.1 must then fail and verify-ca pass
  const server = pki.issue('postgres-server', { dnsNames: ['localhost'] });
  keyForPostgres(server.key);
  const hba = path.join(pki.dir, 'pg_hba.conf');
  writeFileSync(
    hba,
    ['hostssl all all 127.0.0.1/32 scram-sha-256', 'hostssl all all ::1/128 scram-sha-256', 'local all all trust', ''].join('\n'),
  );
  pg = await startEmbeddedPostgres({
    settings: {
      ssl: 'on',
      ssl_cert_file: server.cert,
      ssl_key_file: server.key,
      ssl_ca_file: pki.caCert,
      hba_file: hba,
      password_encryption: 'scram-sha-256',
    },
  });
}, 120_000);

afterAll(async () => {
  await pg?.stop();
});

const urlFor = (host: string, query = ''): string => `postgres://postgres:postgres@${host}:${pg.port}/postgres${query}`;

/** A pool built as the processes build theirs, from their environment; the first query's answer or error. */
async function connectWith(env: Record<string, string>): Promise<{ ssl: boolean; version: string } | Error> {
  const cfg = loadMigrateConfig(env);
  const db = createDb({ url: cfg.databaseUrl, poolMax: 1, tls: cfg.databaseTls });
  try {
    const r = await db.raw<{ rows: Array<{ ssl: boolean; version: string }> }>(
      'select ssl, version from pg_stat_ssl where pid = pg_backend_pid()',
    );
    const row = r.rows[0];
    if (!row) throw new Error('no pg_stat_ssl row');
    return row;
  } catch (err) {
    // the driver's error, under the classified one (db/db-errors.ts) that callers see
    const driver = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    return driver instanceof Error ? driver : new Error(String(driver));
  } finally {
    await db.destroy();
  }
}

describe('Postgres over TLS with a private CA', () => {
  it('verify-full with DATABASE_CA_FILE connects encrypted', async () => {
    const r = await connectWith({ DATABASE_URL: urlFor('localhost'), DATABASE_SSL_MODE: 'verify-full', DATABASE_CA_FILE: pki.caCert });
    expect(r).toEqual({ ssl: true, version: expect.stringMatching(/^TLSv1\.[23]$/) });
  });

  it('a CA file alone means verify-full', async () => {
    const cfg = loadMigrateConfig({ DATABASE_URL: urlFor('localhost'), DATABASE_CA_FILE: pki.caCert });
    expect(cfg.databaseTls?.mode).toBe('verify-full');
    const r = await connectWith({ DATABASE_URL: urlFor('localhost'), DATABASE_CA_FILE: pki.caCert });
    expect(r).toMatchObject({ ssl: true });
  });

  it('refuses a server whose certificate does not chain to a known CA (no CA file: public roots only)', async () => {
    const r = await connectWith({ DATABASE_URL: urlFor('localhost'), DATABASE_SSL_MODE: 'verify-full' });
    expect(r).toBeInstanceOf(Error);
    expect((r as Error).message).toMatch(/self[- ]signed certificate in certificate chain|unable to verify|unable to get local issuer/i);
  });

  it('verify-full refuses a certificate that does not name the host; verify-ca accepts the chain', async () => {
    const full = await connectWith({ DATABASE_URL: urlFor('127.0.0.1'), DATABASE_SSL_MODE: 'verify-full', DATABASE_CA_FILE: pki.caCert });
    expect(full).toBeInstanceOf(Error);
    expect((full as Error).message).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list|does not match/i);
    const ca = await connectWith({ DATABASE_URL: urlFor('127.0.0.1'), DATABASE_SSL_MODE: 'verify-ca', DATABASE_CA_FILE: pki.caCert });
    expect(ca).toMatchObject({ ssl: true });
  });

  it('the server takes no plaintext connection', async () => {
    const r = await connectWith({ DATABASE_URL: urlFor('localhost'), DATABASE_SSL_MODE: 'disable' });
    expect(r).toBeInstanceOf(Error);
    expect((r as Error).message).toMatch(/no encryption/);
  });

  it('a CA file replaced in place (a rotated Secret) is used by the next connections, without a restart', async () => {
    const other = createTestPki('postgres-other');
    const caFile = path.join(pki.dir, 'rotating-ca.crt');
    copyFileSync(other.caCert, caFile); // the wrong CA first: connections fail
    const cfg = loadMigrateConfig({ DATABASE_URL: urlFor('localhost'), DATABASE_CA_FILE: caFile });
    const db = createDb({ url: cfg.databaseUrl, poolMax: 1, tls: cfg.databaseTls });
    try {
      await expect(db.raw('select 1')).rejects.toThrow();
      copyFileSync(pki.caCert, caFile);
      // the files are looked at again at most every 10 s (knex.ts TLS_FILES_CHECK_MS)
      const until = Date.now() + 30_000;
      let ssl: boolean | undefined;
      while (ssl === undefined && Date.now() < until) {
        try {
          const r = await db.raw<{ rows: Array<{ ssl: boolean }> }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()');
          ssl = r.rows[0]?.ssl;
        } catch {
          await sleep(1_000);
        }
      }
      expect(ssl).toBe(true);
    } finally {
      await db.destroy();
    }
  }, 60_000);

  it('`webhook-fanout migrate` against a certificate from another CA logs the cause, without the password or the URL', async () => {
    const other = createTestPki('postgres-wrong-ca');
    // TLS fails before the password is sent: any password shows whether the line leaks it
    const url = `postgres://postgres:not-in-the-log-${Date.now()}@localhost:${pg.port}/postgres`;
    const failed = await cli(['migrate'], { DATABASE_URL: url, DATABASE_SSL_MODE: 'verify-full', DATABASE_CA_FILE: other.caCert });
    expect(failed.code).toBe(1);
    const lines = failed.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { code?: string } });
    const fatal = lines.find((l) => l.level === 60);
    expect(fatal?.msg).toMatch(
      /^failed to start: .*(self[- ]signed certificate in certificate chain|unable to verify|unable to get local issuer)/i,
    );
    expect(fatal?.err?.code).toMatch(/CERT|SELF_SIGNED/);
    expect(failed.stderr + failed.stdout).not.toContain('not-in-the-log');
    expect(failed.stderr + failed.stdout).not.toContain(url);
  });

  it('`webhook-fanout migrate` (the migration job) migrates the TLS-only Postgres', async () => {
    const env = { DATABASE_URL: urlFor('localhost'), DATABASE_SSL_MODE: 'verify-full', DATABASE_CA_FILE: pki.caCert };
    const migrated = await cli(['migrate'], env);
    expect(migrated.stderr + migrated.stdout).toMatch(/applied \d+ migration|schema up to date/);
    expect(migrated.code).toBe(0);
    const check = await connectWith(env);
    expect(check).toMatchObject({ ssl: true });
    const cfg = loadMigrateConfig(env);
    const db = createDb({ url: cfg.databaseUrl, tls: cfg.databaseTls });
    try {
      const tables = await db.raw<{ rows: Array<{ n: number }> }>(
        `select count(*)::int as n from information_schema.tables where table_name = 'webhook_event'`,
      );
      expect(tables.rows[0]?.n).toBe(1);
    } finally {
      await db.destroy();
    }
  });
});
