import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../../src/config/config.js';
import { PROXY_CREDENTIALS_REFRESH_MS, proxyAuthorizationSource } from '../../../src/config/delivery-proxy.js';
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

describe('the worker configuration: the forward proxy of deliveries (DELIVERY_PROXY_*)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxy-credentials-'));
  const username = path.join(dir, 'username');
  const password = path.join(dir, 'password');
  writeFileSync(username, 'egress\n');
  writeFileSync(password, 'first\n');

  it.each([
    { env: {}, deliveryProxy: null },
    { env: { DELIVERY_NO_PROXY: 'svc' }, deliveryProxy: null },
    {
      env: { DELIVERY_PROXY_URL: 'http://proxy.egress:3128', DELIVERY_NO_PROXY: '.svc, cluster.local,10.0.0.0/8' },
      deliveryProxy: { url: 'http://proxy.egress:3128', noProxy: ['.svc', 'cluster.local', '10.0.0.0/8'], credentials: undefined },
    },
    {
      env: { DELIVERY_PROXY_URL: 'https://proxy.egress/', DELIVERY_PROXY_USERNAME_FILE: username, DELIVERY_PROXY_PASSWORD_FILE: password },
      deliveryProxy: { url: 'https://proxy.egress', noProxy: [], credentials: { usernameFile: username, passwordFile: password } },
    },
  ])('$env -> $deliveryProxy', ({ env, deliveryProxy }) => {
    expect(loadWorkerConfig({ ...base, ...env }).deliveryProxy).toEqual(deliveryProxy);
  });

  it.each([
    { env: { DELIVERY_PROXY_URL: 'proxy:3128' }, problem: /^DELIVERY_PROXY_URL must be an http:\/\/ or https:\/\/ URL/ },
    { env: { DELIVERY_PROXY_URL: 'socks5://proxy:1080' }, problem: /^DELIVERY_PROXY_URL must be an http:\/\/ or https:\/\/ URL/ },
    {
      env: { DELIVERY_PROXY_URL: 'http://proxy:3128/egress' },
      problem: /^DELIVERY_PROXY_URL must be the proxy's scheme, host and port only/,
    },
    { env: { DELIVERY_PROXY_URL: 'not a url' }, problem: /^DELIVERY_PROXY_URL must be a URL, got "not a url"/ },
    { env: { DELIVERY_PROXY_URL: 'http://egress:s3cret@proxy:3128' }, problem: /^DELIVERY_PROXY_URL must not carry credentials/ },
    {
      env: { DELIVERY_PROXY_URL: 'http://proxy:3128', DELIVERY_NO_PROXY: 'a.example:443' },
      problem: /^DELIVERY_NO_PROXY: invalid entry "a.example:443"/,
    },
    {
      env: { DELIVERY_PROXY_URL: 'http://proxy:3128', DELIVERY_PROXY_USERNAME_FILE: username },
      problem: /^DELIVERY_PROXY_USERNAME_FILE and DELIVERY_PROXY_PASSWORD_FILE go together/,
    },
    {
      env: {
        DELIVERY_PROXY_URL: 'http://proxy:3128',
        DELIVERY_PROXY_USERNAME_FILE: username,
        DELIVERY_PROXY_PASSWORD_FILE: path.join(dir, 'none'),
      },
      problem: /^DELIVERY_PROXY_PASSWORD_FILE: can not read .*none \(ENOENT\)/,
    },
    {
      env: { DELIVERY_PROXY_USERNAME_FILE: username, DELIVERY_PROXY_PASSWORD_FILE: password },
      problem: /^DELIVERY_PROXY_USERNAME_FILE and DELIVERY_PROXY_PASSWORD_FILE are set but DELIVERY_PROXY_URL is not/,
    },
  ])('names the problem: $env', ({ env, problem }) => {
    const named = problems(env);
    expect(named).toEqual([expect.stringMatching(problem)]);
    // never the password of a URL that carries one
    expect(named.join('\n')).not.toContain('s3cret');
  });

  it('reads the credential files as Basic, again after PROXY_CREDENTIALS_REFRESH_MS (a rotated Secret, no restart)', () => {
    let now = 0;
    const authorization = proxyAuthorizationSource({ usernameFile: username, passwordFile: password }, () => now);
    expect(authorization()).toBe(`Basic ${Buffer.from('egress:first').toString('base64')}`);
    writeFileSync(password, 'second\n');
    now = PROXY_CREDENTIALS_REFRESH_MS - 1;
    expect(authorization()).toBe(`Basic ${Buffer.from('egress:first').toString('base64')}`);
    now = PROXY_CREDENTIALS_REFRESH_MS;
    expect(authorization()).toBe(`Basic ${Buffer.from('egress:second').toString('base64')}`);
    expect(proxyAuthorizationSource(undefined)()).toBeNull();
  });
});
