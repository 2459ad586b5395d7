import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';

const payloads = fileURLToPath(new URL('../fixtures/payloads/', import.meta.url));

const endpoint = (name: string, extra: string) => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: ${name}
  namespace: billing
spec:
  source: stripe
  url: https://billing.example.com/hooks
${extra}`;

// the example users copy (examples/content-routing/): what it says it does is what this file checks
const BIG_INVOICES = await readFile(fileURLToPath(new URL('../../examples/content-routing/big-invoices.yaml', import.meta.url)), 'utf8');

describe('webhook-fanout validate and try, as a pipeline runs them (no cluster, database or Temporal)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wf-validate-'));
    await mkdir(path.join(dir, 'good'));
    await mkdir(path.join(dir, 'bad'));
    await writeFile(
      path.join(dir, 'good', 'endpoints.yaml'),
      `${BIG_INVOICES}---\n${endpoint('all', '')}---\n${endpoint('token-and-signature', '  auth:\n    type: Bearer\n    secretRef: {name: s, key: t}\n  signing:\n    type: StandardWebhooks\n    secretRef: {name: s, key: k}\n')}`,
    );
    await writeFile(
      path.join(dir, 'bad', 'endpoints.yaml'),
      [
        endpoint('typo', '  filter: "event.type == \'invoice.paid\' &&\\n  event.dta.amount > 1"\n'),
        endpoint('unclosed', '  transform:\n    jsonata: \'{"kind": type\'\n'),
        endpoint('fine', '  filter: "event.type == \'x\'"\n'),
        endpoint('schema', '  maxAttempts: 0\n'),
        endpoint(
          'signed-twice',
          '  auth:\n    type: HMAC\n    secretRef: {name: s, key: k}\n  signing:\n    type: StandardWebhooks\n    secretRef: {name: s, key: k}\n',
        ),
      ].join('---\n'),
    );
    await writeFile(path.join(dir, 'bad', 'syntax.yaml'), endpoint('syntax', '  filter: "event.type.startsWith("\n'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('validate accepts a folder of valid manifests', async () => {
    const res = await cli(['validate', '-f', path.join(dir, 'good')], {});
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('ok: 3 WebhookEndpoint(s)');
  });

  it('validate names every problem by file, document and position, and exits 1', async () => {
    const res = await cli(['validate', '-f', path.join(dir, 'bad'), '-f', path.join(dir, 'good', 'endpoints.yaml')], {});
    expect(res.code).toBe(1);
    const file = path.join(dir, 'bad', 'endpoints.yaml');
    const lines = res.stdout.trim().split('\n');
    expect(lines).toContain(`${file}#4: WebhookEndpoint billing/schema: spec.maxAttempts: must be >= 1`);
    expect(lines).toContain(
      `${file}#1: WebhookEndpoint billing/typo: spec.filter at 2:8: event has no field 'dta' (it has source, type, id, receivedAt, headers, data)`,
    );
    expect(lines.find((l) => l.startsWith(`${file}#2: WebhookEndpoint billing/unclosed: spec.transform.jsonata at 1:`))).toBeDefined();
    expect(lines).toContain(
      `${path.join(dir, 'bad', 'syntax.yaml')}#1: WebhookEndpoint billing/syntax: spec.filter at 1:11: syntax error: found . but expecting end of input`,
    );
    expect(lines).toContain(
      `${file}#5: WebhookEndpoint billing/signed-twice: spec.signing and an auth.type that signs (HMAC, StandardWebhooks) can not be used together: move the signing to spec.signing`,
    );
    expect(res.stdout).not.toContain('billing/fine');
    expect(lines.at(-1)).toMatch(/^5 problem\(s\) in /);
  });

  it('try prints that the endpoint is routed and the body it would receive', async () => {
    await writeFile(path.join(dir, 'big.yaml'), BIG_INVOICES);
    const res = await cli(['try', '-f', path.join(dir, 'big.yaml'), '--event', path.join(payloads, 'stripe-invoice-paid.json')], {});
    expect(res.stderr).toBe('');
    expect({ code: res.code, stdout: res.stdout }).toMatchObject({ code: 0 });
    const [routed, destination, heading, body] = res.stdout.trim().split('\n');
    expect(routed).toBe('routed: WebhookEndpoint billing/big-invoices (source "stripe", type "invoice.paid", filter true)');
    expect(destination).toBe('destination: HTTP https://billing.example.com/hooks');
    expect(heading).toBe('body (after spec.transform.jsonata):');
    expect(JSON.parse(body ?? '')).toEqual({ kind: 'invoice.paid', invoice: 'in_1PqR8qLkdIwHu7ixAbCdEfGh', total: 125 });
  });

  it('try says when the filter is false, or the type differs, and exits 1', async () => {
    const small = await cli(
      ['try', '-f', path.join(dir, 'big.yaml'), '--event', path.join(payloads, 'stripe-invoice-paid.json'), '--type', 'charge.refunded'],
      {},
    );
    expect(small.code).toBe(1);
    expect(small.stdout.trim()).toBe('not routed: the filter is false for this event');
    await writeFile(path.join(dir, 'typed.yaml'), endpoint('typed', '  eventType: invoice.created\n'));
    const typed = await cli(['try', '-f', path.join(dir, 'typed.yaml'), '--event', path.join(payloads, 'stripe-invoice-paid.json')], {});
    expect(typed.code).toBe(1);
    expect(typed.stdout.trim()).toBe('not routed: the event\'s type is "invoice.paid", the endpoint takes only "invoice.created"');
  });

  it('try shows headers to the filter lower-cased, and an evaluation error as not routed', async () => {
    await writeFile(
      path.join(dir, 'hdr.yaml'),
      endpoint('hdr', "  filter: \"event.headers['x-tenant'] == 'acme' && event.data.nope == 1\"\n"),
    );
    const res = await cli(
      ['try', '-f', path.join(dir, 'hdr.yaml'), '--event', path.join(payloads, 'stripe-invoice-paid.json'), '--header', 'X-Tenant=acme'],
      {},
    );
    expect(res.code).toBe(1);
    expect(res.stdout.trim()).toBe('not routed: the filter failed (counted as not matched): field not found: nope');
  });

  it('try refuses an invalid expression with exit code 2', async () => {
    const res = await cli(['try', '-f', path.join(dir, 'bad', 'syntax.yaml'), '--event', path.join(payloads, 'github-push.json')], {});
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('spec.filter at 1:11: syntax error');
  });

  // issue 43 item 6: every destination type through validate and try, a valid endpoint of each and
  // one refused for a rule of its own (the destination's block, url, auth, its credentials' pairs)
  const BROKERS = `  destination:\n    type: `;
  const DESTINATIONS = [
    {
      type: 'HTTP',
      spec: '  url: https://billing.example.com/hooks\n',
      target: 'https://billing.example.com/hooks',
      broken: '  destination: {type: HTTP}\n',
      problem: 'url is required for an HTTP destination (the default)',
    },
    {
      type: 'SQS',
      spec: `${BROKERS}SQS\n    sqs: {queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/payments", region: eu-west-1, roleArn: "arn:aws:iam::123456789012:role/payments"}\n`,
      target: 'https://sqs.eu-west-1.amazonaws.com/123456789012/payments',
      broken: `${BROKERS}SQS\n    sns: {topicArn: "arn:aws:sns:eu-west-1:123456789012:payments", region: eu-west-1}\n`,
      problem: 'destination.sqs is required when destination.type is SQS',
    },
    {
      type: 'SNS',
      spec: `${BROKERS}SNS\n    sns: {topicArn: "arn:aws:sns:eu-west-1:123456789012:payments", region: eu-west-1}\n`,
      target: 'arn:aws:sns:eu-west-1:123456789012:payments',
      broken: `  url: https://billing.example.com/hooks\n${BROKERS}SNS\n    sns: {topicArn: "arn:aws:sns:eu-west-1:123456789012:payments", region: eu-west-1}\n`,
      problem: "url is only for an HTTP destination: the destination's block says where its messages go",
    },
    {
      type: 'EventBridge',
      spec: `${BROKERS}EventBridge\n    eventBridge: {eventBusName: payments, region: eu-west-1, detailType: stripe}\n`,
      target: 'eventbridge://eu-west-1/payments',
      broken: `  auth: {type: Bearer, secretRef: {name: s, key: t}}\n${BROKERS}EventBridge\n    eventBridge: {eventBusName: payments, region: eu-west-1}\n`,
      problem:
        "auth (Basic, Bearer, OAuth2ClientCredentials) is only for an HTTP destination; spec.signing signs every destination's messages",
    },
    {
      type: 'Kafka',
      spec: `${BROKERS}Kafka\n    kafka:\n      bootstrapServers: [kafka-0.kafka:9093, kafka-1.kafka:9093]\n      topic: payments.stripe\n      tls: {caBundleRef: {name: kafka-ca, key: ca.crt}}\n      sasl: {mechanism: SCRAM-SHA-512, username: fanout, passwordSecretRef: {name: kafka, key: password}}\n`,
      target: 'kafka://kafka-0.kafka:9093,kafka-1.kafka:9093/payments.stripe',
      broken: `${BROKERS}Kafka\n    kafka: {bootstrapServers: [kafka-0.kafka:9093], topic: payments}\n    nats: {servers: [nats://nats:4222], subject: payments}\n`,
      problem: 'destination.nats is only read when destination.type is NATS',
    },
    {
      type: 'RabbitMQ',
      spec: `${BROKERS}RabbitMQ\n    rabbitMQ: {url: "amqps://rabbitmq.messaging:5671/payments", exchange: payments, username: fanout, passwordSecretRef: {name: rabbitmq, key: password}}\n`,
      target: 'amqps://rabbitmq.messaging:5671/payments exchange "payments"',
      broken: `${BROKERS}RabbitMQ\n    rabbitMQ: {url: "amqps://rabbitmq.messaging:5671/payments", exchange: payments, username: fanout}\n`,
      problem: 'rabbitMQ.username and rabbitMQ.passwordSecretRef go together',
    },
    {
      type: 'NATS',
      spec: `${BROKERS}NATS\n    nats: {servers: ["tls://nats.messaging:4222"], subject: payments.stripe, tokenSecretRef: {name: nats, key: token}}\n`,
      target: 'tls://nats.messaging:4222/payments.stripe',
      broken: `${BROKERS}NATS\n    nats: {servers: ["nats://nats:4222"], subject: payments, username: fanout, passwordSecretRef: {name: nats, key: password}, tokenSecretRef: {name: nats, key: token}}\n`,
      problem: 'nats: a tokenSecretRef or a username, not both',
    },
  ] as const;
  const nameOf = (type: string) => `to-${type.toLowerCase()}`;
  /** an endpoint without the url the helper gives (not HTTP's), signed as every type may be */
  const withDestination = (name: string, spec: string) =>
    endpoint(name, `${spec}  signing: {type: StandardWebhooks, secretRef: {name: s, key: k}}\n`).replace(
      '  url: https://billing.example.com/hooks\n',
      '',
    );

  it('validate accepts an endpoint of every destination type, and refuses each for a rule of its own', async () => {
    await mkdir(path.join(dir, 'types'));
    await writeFile(path.join(dir, 'types', 'good.yaml'), DESTINATIONS.map((d) => withDestination(nameOf(d.type), d.spec)).join('---\n'));
    const good = await cli(['validate', '-f', path.join(dir, 'types', 'good.yaml')], {});
    expect(good.stdout).toContain(`ok: ${DESTINATIONS.length} WebhookEndpoint(s)`);
    expect(good.code).toBe(0);

    const file = path.join(dir, 'types', 'broken.yaml');
    await writeFile(file, DESTINATIONS.map((d) => withDestination(nameOf(d.type), d.broken)).join('---\n'));
    const broken = await cli(['validate', '-f', file], {});
    expect(broken.code).toBe(1);
    expect(broken.stdout.trim().split('\n')).toEqual([
      ...DESTINATIONS.map((d, i) => `${file}#${i + 1}: WebhookEndpoint billing/${nameOf(d.type)}: ${d.problem}`),
      `${DESTINATIONS.length} problem(s) in ${file} (${DESTINATIONS.length} WebhookEndpoint(s), 0 InboundCredential(s) valid)`,
    ]);
  });

  it.each(DESTINATIONS)('try says where a $type endpoint sends the event: its type and target, never a secret', async (d) => {
    const file = path.join(dir, `${nameOf(d.type)}.yaml`);
    await writeFile(file, withDestination(nameOf(d.type), d.spec));
    const res = await cli(['try', '-f', file, '--event', path.join(payloads, 'stripe-invoice-paid.json')], {});
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout.split('\n').slice(0, 3)).toEqual([
      `routed: WebhookEndpoint billing/${nameOf(d.type)} (source "stripe", type "invoice.paid")`,
      `destination: ${d.type} ${d.target}`,
      'body (the payload as received):',
    ]);
  });

  it('try refuses an endpoint its destination rules refuse, with exit code 2', async () => {
    const nats = DESTINATIONS.find((d) => d.type === 'NATS')!;
    const file = path.join(dir, 'broken-nats.yaml');
    await writeFile(file, withDestination('broken-nats', nats.broken));
    const res = await cli(['try', '-f', file, '--event', path.join(payloads, 'stripe-invoice-paid.json')], {});
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe(`WebhookEndpoint billing/broken-nats: ${nats.problem}`);
  });
});

// OAuth2 client credentials (docs/endpoints.md): validate refuses offline what the operator's CRD
// would, each problem naming its field
const oauth2 = (name: string, fields: string, type = 'OAuth2ClientCredentials') =>
  endpoint(name, `  auth:\n    type: ${type}\n${fields ? `    oauth2:\n${fields}` : ''}`);
const GOOD_OAUTH2 = '      tokenUrl: https://idp.partner.example/oauth/token\n      clientId: webhook-fanout\n';

describe('webhook-fanout validate: OAuth2 endpoints', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wf-validate-oauth2-'));
    await writeFile(
      path.join(dir, 'good.yaml'),
      [
        oauth2(
          'basic',
          `${GOOD_OAUTH2}      clientSecretRef: {name: partner-oauth, key: client-secret}\n      scopes: [webhooks.write]\n      audience: https://api.partner.example\n`,
        ),
        oauth2(
          'post',
          `${GOOD_OAUTH2}      clientSecretRef: {name: partner-oauth, key: client-secret}\n      clientAuthentication: ClientSecretPost\n`,
        ),
        oauth2(
          'jwt',
          `${GOOD_OAUTH2}      privateKeySecretRef: {name: partner-key, key: key.pem}\n      keyId: k1\n      clientAuthentication: PrivateKeyJwt\n`,
        ),
      ].join('---\n'),
    );
    const secret = '      clientSecretRef: {name: partner-oauth, key: client-secret}\n';
    await writeFile(
      path.join(dir, 'bad.yaml'),
      [
        oauth2('no-oauth2', ''),
        oauth2('token-url', `      tokenUrl: https://user:pass@idp.example/token\n      clientId: c\n${secret}`),
        oauth2('no-client', `      tokenUrl: https://idp.example/token\n${secret}`),
        oauth2('no-secret', GOOD_OAUTH2),
        oauth2('jwt-with-secret', `${GOOD_OAUTH2}${secret}      clientAuthentication: PrivateKeyJwt\n`),
        oauth2('key-id', `${GOOD_OAUTH2}${secret}      keyId: k1\n`),
        oauth2('method', `${GOOD_OAUTH2}${secret}      clientAuthentication: ClientSecretJwt\n`),
        oauth2('scope', `${GOOD_OAUTH2}${secret}      scopes: ["two words"]\n`),
        oauth2('not-oauth2', `${GOOD_OAUTH2}${secret}`, 'Bearer'),
      ].join('---\n'),
    );
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('accepts each client authentication method', async () => {
    const res = await cli(['validate', '-f', path.join(dir, 'good.yaml')], {});
    expect(res.stderr).toBe('');
    expect(res.stdout).toContain('ok: 3 WebhookEndpoint(s)');
    expect(res.code).toBe(0);
  });

  it('names the field of each problem, one line per endpoint, and exits 1', async () => {
    const res = await cli(['validate', '-f', path.join(dir, 'bad.yaml')], {});
    expect(res.code).toBe(1);
    const lines = res.stdout.trim().split('\n');
    const problemOf = (n: number, name: string): string => {
      const found = lines.filter((l) => l.startsWith(`${path.join(dir, 'bad.yaml')}#${n}: WebhookEndpoint billing/${name}: `));
      expect(found, `${name}: ${res.stdout}`).toHaveLength(1);
      return found[0] ?? '';
    };
    expect(problemOf(1, 'no-oauth2')).toContain('auth.oauth2 is required when auth.type is OAuth2ClientCredentials');
    expect(problemOf(2, 'token-url')).toMatch(/spec\.auth\.oauth2\.tokenUrl: must be an http:\/\/ or https:\/\/ URL without credentials/);
    expect(problemOf(3, 'no-client')).toMatch(/spec\.auth\.oauth2.*clientId/);
    expect(problemOf(4, 'no-secret')).toContain('auth.oauth2 needs clientSecretRef for ClientSecretBasic and ClientSecretPost');
    expect(problemOf(5, 'jwt-with-secret')).toContain('privateKeySecretRef (and no clientSecretRef) for PrivateKeyJwt');
    expect(problemOf(6, 'key-id')).toContain('auth.oauth2.keyId is only used with clientAuthentication PrivateKeyJwt');
    expect(problemOf(7, 'method')).toMatch(/spec\.auth\.oauth2\.clientAuthentication: /);
    expect(problemOf(8, 'scope')).toMatch(/spec\.auth\.oauth2\.scopes\.0: must match pattern/);
    expect(problemOf(9, 'not-oauth2')).toContain('auth.oauth2 is required when auth.type is OAuth2ClientCredentials, and only read then');
    expect(lines.at(-1)).toMatch(/^9 problem\(s\) in /);
  });
});
