import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../../src/config/config.js';
import { problemsOf } from '../../support/config-problems.js';

const base = { DATABASE_URL: 'postgres://u:p@db:5432/webhooks' };

/** The problems the worker's configuration names for env, or [] when it loads. */
const problems = (env: Readonly<Record<string, string | undefined>>): string[] => problemsOf(() => loadWorkerConfig({ ...base, ...env }));

describe('the worker configuration: consuming the queue itself (WORKER_CONSUME_QUEUE)', () => {
  it.each([
    { env: {}, consumeQueue: null },
    { env: { WORKER_CONSUME_QUEUE: 'false', QUEUE_URL: 'http://sqs:4566/000000000000/q' }, consumeQueue: null },
    {
      env: { WORKER_CONSUME_QUEUE: 'true', QUEUE_URL: 'http://sqs:4566/000000000000/q' },
      consumeQueue: {
        queueUrl: 'http://sqs:4566/000000000000/q',
        concurrency: 10,
        visibilityTimeoutSeconds: 30,
        aws: { region: 'us-east-1' },
      },
    },
    {
      env: {
        WORKER_CONSUME_QUEUE: 'true',
        QUEUE_URL: 'http://sqs:4566/000000000000/q',
        CONSUMER_CONCURRENCY: '4',
        AWS_REGION: 'eu-west-1',
      },
      consumeQueue: { concurrency: 4, aws: { region: 'eu-west-1', transport: 'signed' } },
    },
    {
      env: { WORKER_CONSUME_QUEUE: 'true', QUEUE_URL: 'http://sqs:4566/000000000000/q', AWS_TRANSPORT: 'sdk' },
      consumeQueue: { aws: { region: 'us-east-1', transport: 'sdk' } },
    },
  ])('$env -> consumeQueue $consumeQueue', ({ env, consumeQueue }) => {
    const cfg = loadWorkerConfig({ ...base, ...env });
    if (consumeQueue === null) expect(cfg.consumeQueue).toBeNull();
    else expect(cfg.consumeQueue).toMatchObject(consumeQueue);
  });

  it.each([
    { env: { WORKER_CONSUME_QUEUE: 'true' }, problem: /^QUEUE_URL is required/ },
    { env: { WORKER_CONSUME_QUEUE: 'sometimes' }, problem: /^WORKER_CONSUME_QUEUE must be true or false, got "sometimes"/ },
    {
      env: { WORKER_CONSUME_QUEUE: 'true', QUEUE_URL: 'http://sqs/q', CONSUMER_CONCURRENCY: '50' },
      problem: /^CONSUMER_CONCURRENCY must be/,
    },
    {
      env: { WORKER_CONSUME_QUEUE: 'true', QUEUE_URL: 'http://sqs/q', AWS_TRANSPORT: 'smithy' },
      problem: /^AWS_TRANSPORT must be one of signed, sdk, got "smithy"/,
    },
  ])('names the problem: $env', ({ env, problem }) => {
    expect(problems(env)).toEqual([expect.stringMatching(problem)]);
  });
});

describe('the worker configuration: the workflow sandbox diagnostics (WORKER_SANDBOX_DIAGNOSTICS)', () => {
  it.each([
    { env: {}, sandboxDiagnostics: false },
    { env: { WORKER_SANDBOX_DIAGNOSTICS: 'true' }, sandboxDiagnostics: true },
    { env: { WORKER_SANDBOX_DIAGNOSTICS: 'false' }, sandboxDiagnostics: false },
  ])('$env -> $sandboxDiagnostics', ({ env, sandboxDiagnostics }) => {
    expect(loadWorkerConfig({ ...base, ...env }).sandboxDiagnostics).toBe(sandboxDiagnostics);
  });

  it('names a value that is not a boolean', () => {
    expect(problems({ WORKER_SANDBOX_DIAGNOSTICS: 'sometimes' })).toEqual([
      expect.stringMatching(/^WORKER_SANDBOX_DIAGNOSTICS must be true or false, got "sometimes"/),
    ]);
  });
});
