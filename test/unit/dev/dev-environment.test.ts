import { describe, expect, it } from 'vitest';
import { loadDevConfig } from '../../../src/dev/dev-config.js';
import { ConfigError } from '../../../src/config/env-reader.js';
import { devEnvironment, loadDevProcessConfigs, preflight, type DevWiring } from '../../../src/dev/dev-environment.js';

const WIRING: DevWiring = {
  databaseUrl: 'postgres://dev:pw@127.0.0.1:5999/dev',
  temporalAddress: '127.0.0.1:7999',
  awsEndpoint: 'http://127.0.0.1:4999',
  topicArn: 'arn:aws:sns:us-east-1:000000000000:webhook-fanout-events',
  queueUrl: 'http://127.0.0.1:4999/000000000000/webhook-fanout-events',
  devIdentityProvider: {
    authUrl: 'http://127.0.0.1:8081',
    audience: 'aud',
    issuer: 'http://127.0.0.1:8081/',
    clockToleranceSeconds: 30,
    jwksCacheTtlSeconds: 600,
    namespacesClaim: 'https://webhookfanout.io/namespaces',
  },
};

describe('dev mode configuration: the production loaders on an overlay of the environment', () => {
  it.each<[string, Record<string, string>, (c: ReturnType<typeof loadDevProcessConfigs>) => unknown, unknown]>([
    [
      'dev defaults where the user set nothing',
      {},
      (c) => [c.ingest.dbPoolMax, c.ingest.sweepIntervalMs, c.ingest.sweepMinAgeMs],
      [20, 10_000, 10_000],
    ],
    [
      'production defaults dev mode keeps',
      {},
      (c) => [c.ingest.port, c.ingest.bodyLimitBytes, c.consumer.concurrency, c.worker.maxConcurrentActivities],
      [8080, 1024 * 1024, 10, 100],
    ],
    [
      'the user wins over dev defaults',
      { SWEEP_INTERVAL_SECONDS: '3', DB_POOL_MAX: '5' },
      (c) => [c.ingest.sweepIntervalMs, c.worker.dbPoolMax],
      [3_000, 5],
    ],
    [
      'the user tunes the processes',
      { PORT: '9000', WORKER_MAX_CONCURRENT_ACTIVITIES: '7' },
      (c) => [c.ingest.port, c.worker.maxConcurrentActivities],
      [9000, 7],
    ],
    [
      'what dev mode started wins over the environment',
      { DATABASE_URL: 'postgres://elsewhere/db', QUEUE_URL: 'http://elsewhere/q' },
      (c) => [c.ingest.databaseUrl, c.consumer.queueUrl, c.worker.temporal.address, c.ingest.topicArn],
      [WIRING.databaseUrl, WIRING.queueUrl, WIRING.temporalAddress, WIRING.topicArn],
    ],
    ['loopback only, whatever HOST says', { HOST: '0.0.0.0' }, (c) => c.ingest.host, '127.0.0.1'],
    ['the admin API trusts the local identity provider', {}, (c) => c.ingest.adminApi, WIRING.devIdentityProvider],
    ['ADMIN_API_ENABLED=false still disables it', { ADMIN_API_ENABLED: 'false' }, (c) => c.ingest.adminApi, null],
  ])('%s', (_what, env, pick, expected) => {
    expect(pick(loadDevProcessConfigs(devEnvironment(env, WIRING)))).toEqual(expected);
  });

  it('names the problems of every process at once, before anything is started', () => {
    const env = { PORT: 'eighty', WORKER_MAX_CONCURRENT_ACTIVITIES: '0', CONSUMER_CONCURRENCY: '99' };
    let problems: string[] = [];
    try {
      preflight(env, loadDevConfig(env));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^PORT /),
        expect.stringMatching(/^WORKER_MAX_CONCURRENT_ACTIVITIES /),
        expect.stringMatching(/^CONSUMER_CONCURRENCY /),
      ]),
    );
    expect(problems).toHaveLength(3);
  });

  it('a correct environment passes the preflight; a real identity provider needs its audience', () => {
    expect(preflight({}, loadDevConfig({})).ingest.adminApi?.audience).toBe('https://webhook-fanout.local/api');
    const external = { AUTH_URL: 'https://tenant.example' };
    expect(() => preflight(external, loadDevConfig(external))).toThrow(/AUTH_AUDIENCE/);
  });
});
