import { describe, expect, it } from 'vitest';
import { loadIngestConfig } from '../../../src/config/config.js';
import { problemsOf } from '../../support/config-problems.js';

const base = {
  DATABASE_URL: 'postgres://u:p@db:5432/webhooks',
  TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:t',
  ADMIN_API_ENABLED: 'false',
};

const problems = (env: Readonly<Record<string, string | undefined>>): string[] => problemsOf(() => loadIngestConfig({ ...base, ...env }));

describe('ingest configuration: retention (RETENTION_*)', () => {
  it.each([
    {
      env: {},
      retention: {
        maxAgeSeconds: null,
        payloadMaxAgeSeconds: null,
        intervalMs: 300_000,
        batchSize: 500,
        batchPauseMs: 100,
        settledGraceSeconds: 900,
      },
    },
    { env: { RETENTION_SETTLED_GRACE: '5s' }, retention: { settledGraceSeconds: 5 } },
    { env: { RETENTION_SETTLED_GRACE: '1h' }, retention: { settledGraceSeconds: 3600 } },
    { env: { RETENTION_MAX_AGE: '90d' }, retention: { maxAgeSeconds: 90 * 86_400, payloadMaxAgeSeconds: null } },
    {
      env: { RETENTION_MAX_AGE: '90d', RETENTION_PAYLOAD_MAX_AGE: '36h' },
      retention: { maxAgeSeconds: 90 * 86_400, payloadMaxAgeSeconds: 36 * 3600 },
    },
    { env: { RETENTION_PAYLOAD_MAX_AGE: '45s' }, retention: { maxAgeSeconds: null, payloadMaxAgeSeconds: 45 } },
    {
      env: { RETENTION_INTERVAL_SECONDS: '60', RETENTION_BATCH_SIZE: '2000', RETENTION_BATCH_PAUSE_MS: '0' },
      retention: { intervalMs: 60_000, batchSize: 2000, batchPauseMs: 0 },
    },
  ])('$env', ({ env, retention }) => {
    expect(loadIngestConfig({ ...base, ...env }).retention).toMatchObject(retention);
  });

  it.each([
    {
      env: { RETENTION_MAX_AGE: '3 months' },
      problem: /^RETENTION_MAX_AGE must be a duration such as 90d, 36h, 30m or 45s .*got "3 months"; unset it to keep events forever/,
    },
    { env: { RETENTION_PAYLOAD_MAX_AGE: '0s' }, problem: /^RETENTION_PAYLOAD_MAX_AGE must be a duration/ },
    {
      env: { RETENTION_MAX_AGE: '7d', RETENTION_PAYLOAD_MAX_AGE: '30d' },
      problem: /^RETENTION_PAYLOAD_MAX_AGE \(30d\) must be shorter than RETENTION_MAX_AGE \(7d\)/,
    },
    {
      env: { RETENTION_MAX_AGE: '7d', RETENTION_PAYLOAD_MAX_AGE: '168h' },
      problem: /^RETENTION_PAYLOAD_MAX_AGE \(7d\) must be shorter than RETENTION_MAX_AGE \(7d\)/,
    },
    {
      env: { RETENTION_SETTLED_GRACE: '0' },
      problem: /^RETENTION_SETTLED_GRACE must be a duration such as 90d, 36h, 30m or 45s .*; unset it for the default, 15m$/,
    },
    { env: { RETENTION_BATCH_SIZE: '0' }, problem: /^RETENTION_BATCH_SIZE must be an integer between 1 and 10000/ },
    { env: { RETENTION_INTERVAL_SECONDS: 'soon' }, problem: /^RETENTION_INTERVAL_SECONDS must be an integer/ },
  ])('names the problem: $env', ({ env, problem }) => {
    expect(problems(env)).toEqual([expect.stringMatching(problem)]);
  });

  it('names every problem at once', () => {
    expect(problems({ RETENTION_MAX_AGE: 'x', RETENTION_PAYLOAD_MAX_AGE: 'y', RETENTION_BATCH_PAUSE_MS: '-1' })).toHaveLength(3);
  });
});
