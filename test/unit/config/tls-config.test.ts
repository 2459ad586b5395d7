import { describe, expect, it } from 'vitest';
import { loadConsumerConfig, loadMigrateConfig } from '../../../src/config/config.js';
import { problemsOf } from '../../support/config-problems.js';

// package.json is a readable file wherever the tests run; the missing one is not
const FILE = 'package.json';
const MISSING = '/nonexistent/ca.pem';
const db = { DATABASE_URL: 'postgres://u:p@db:5432/webhooks' };
const consumer = { ...db, QUEUE_URL: 'http://sqs:4566/000000000000/q' };

describe('Postgres TLS settings (DATABASE_SSL_MODE and its files)', () => {
  it.each([
    { env: {}, tls: null },
    { env: { DATABASE_CA_FILE: FILE }, tls: { mode: 'verify-full', caFile: FILE } },
    { env: { DATABASE_SSL_MODE: 'verify-ca', DATABASE_CA_FILE: FILE }, tls: { mode: 'verify-ca', caFile: FILE } },
    { env: { DATABASE_SSL_MODE: 'require' }, tls: { mode: 'require', caFile: undefined } },
    {
      env: { DATABASE_SSL_MODE: 'verify-full', DATABASE_CLIENT_CERT_FILE: FILE, DATABASE_CLIENT_KEY_FILE: FILE },
      tls: { certFile: FILE, keyFile: FILE },
    },
  ])('$env -> $tls', ({ env, tls }) => {
    const cfg = loadMigrateConfig({ ...db, ...env });
    if (tls === null) expect(cfg.databaseTls).toBeNull();
    else expect(cfg.databaseTls).toMatchObject(tls);
  });

  it.each([
    {
      env: { DATABASE_SSL_MODE: 'prefer' },
      problem: 'DATABASE_SSL_MODE must be one of disable, require, verify-ca, verify-full, got "prefer"',
    },
    { env: { DATABASE_CA_FILE: MISSING }, problem: `DATABASE_CA_FILE: can not read ${MISSING} (ENOENT)` },
    {
      env: { DATABASE_CLIENT_CERT_FILE: FILE },
      problem: 'DATABASE_CLIENT_CERT_FILE and DATABASE_CLIENT_KEY_FILE go together: set both or neither',
    },
    {
      env: { DATABASE_SSL_MODE: 'require', DATABASE_CA_FILE: FILE },
      problem: 'DATABASE_SSL_MODE=require does not check the server: with DATABASE_CA_FILE use verify-ca or verify-full',
    },
    {
      env: { DATABASE_SSL_MODE: 'disable', DATABASE_CA_FILE: FILE },
      problem: 'DATABASE_SSL_MODE=disable contradicts DATABASE_CA_FILE / DATABASE_CLIENT_CERT_FILE',
    },
    {
      env: { DATABASE_URL: 'postgres://u:p@db/w?sslmode=require', DATABASE_CA_FILE: FILE },
      problem: 'DATABASE_URL sets sslmode and DATABASE_SSL_MODE / DATABASE_CA_FILE are set too: say TLS in one place',
    },
  ])('$env -> "$problem"', ({ env, problem }) => {
    expect(problemsOf(() => loadMigrateConfig({ ...db, ...env }))).toContain(problem);
  });
});

describe("Temporal TLS settings (the Temporal CLI's TEMPORAL_TLS_* and TEMPORAL_API_KEY)", () => {
  it.each([
    { env: {}, tls: null },
    { env: { TEMPORAL_TLS: 'true' }, tls: { caFile: undefined, certFile: undefined, apiKey: undefined } },
    {
      env: { TEMPORAL_TLS_CA: FILE, TEMPORAL_TLS_SERVER_NAME: 'temporal.internal' },
      tls: { caFile: FILE, serverName: 'temporal.internal' },
    },
    { env: { TEMPORAL_TLS_CERT: FILE, TEMPORAL_TLS_KEY: FILE }, tls: { certFile: FILE, keyFile: FILE } },
    { env: { TEMPORAL_API_KEY: 'k' }, tls: { apiKey: { value: 'k' } } },
    { env: { TEMPORAL_API_KEY_FILE: FILE }, tls: { apiKey: { file: FILE } } },
  ])('$env -> $tls', ({ env, tls }) => {
    const cfg = loadConsumerConfig({ ...consumer, ...env });
    if (tls === null) expect(cfg.temporal.tls).toBeNull();
    else expect(cfg.temporal.tls).toMatchObject(tls);
  });

  it.each([
    { env: { TEMPORAL_TLS_CERT: FILE }, problem: 'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both or neither' },
    { env: { TEMPORAL_TLS_CA: MISSING }, problem: `TEMPORAL_TLS_CA: can not read ${MISSING} (ENOENT)` },
    { env: { TEMPORAL_API_KEY: 'k', TEMPORAL_API_KEY_FILE: FILE }, problem: 'set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both' },
    {
      env: { TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' },
      problem:
        'TEMPORAL_TLS=false contradicts TEMPORAL_TLS_CA / TEMPORAL_TLS_CERT / TEMPORAL_TLS_SERVER_NAME / TEMPORAL_API_KEY (an API key is never sent in plaintext)',
    },
  ])('$env -> "$problem"', ({ env, problem }) => {
    expect(problemsOf(() => loadConsumerConfig({ ...consumer, ...env }))).toContain(problem);
  });
});
