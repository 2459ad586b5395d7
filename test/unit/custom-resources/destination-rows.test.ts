import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import type { DestinationSecrets, EndpointDestination } from '../../../src/domain/records.js';
import { WebhookEndpointSpec, type WebhookEndpointResource } from '../../../src/custom-resources/specs.js';
import { endpointRow } from '../../../src/custom-resources/to-rows.js';

// spec.destination -> the row (destination without a secret, the credentials apart, the address
// the row shows as url), the same for dev mode and the operator; what the CRD's CEL refuses, in its words.
const resource = (spec: Record<string, unknown>): WebhookEndpointResource => ({
  apiVersion: 'webhookfanout.io/v1alpha1',
  kind: 'WebhookEndpoint',
  metadata: { name: 'orders', namespace: 'shop' },
  spec: { source: 'stripe', ...spec } as WebhookEndpointSpec,
});

/** Secrets of namespace `shop` only; asks are recorded (namespace/name/key). */
function secretsOf(values: Record<string, string>) {
  const asked: string[] = [];
  const read = async (ns: string, name: string, key: string) => {
    asked.push(`${ns}/${name}/${key}`);
    return ns === 'shop' ? values[`${name}/${key}`] : undefined;
  };
  return { asked, read };
}

const ref = (name: string, key: string) => ({ name, key });
const aws = { region: 'eu-west-1', endpointUrl: null, roleArn: null };

describe('endpointRow: spec.destination', () => {
  it.each<[string, Record<string, unknown>, EndpointDestination, DestinationSecrets, string]>([
    ['absent: HTTP, url as it is', { url: 'https://orders.example/hook' }, { type: 'HTTP' }, {}, 'https://orders.example/hook'],
    [
      'HTTP named',
      { url: 'https://orders.example/hook', destination: { type: 'HTTP' } },
      { type: 'HTTP' },
      {},
      'https://orders.example/hook',
    ],
    [
      'SQS',
      { destination: { type: 'SQS', sqs: { queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/payments', region: 'eu-west-1' } } },
      { type: 'SQS', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/payments', ...aws },
      {},
      'https://sqs.eu-west-1.amazonaws.com/123456789012/payments',
    ],
    [
      'SNS with a role and an endpoint',
      {
        destination: {
          type: 'SNS',
          sns: {
            topicArn: 'arn:aws:sns:eu-west-1:123456789012:payments',
            region: 'eu-west-1',
            endpointUrl: 'https://vpce-1.sns.eu-west-1.vpce.amazonaws.com',
            roleArn: 'arn:aws:iam::123456789012:role/fanout-publish',
          },
        },
      },
      {
        type: 'SNS',
        topicArn: 'arn:aws:sns:eu-west-1:123456789012:payments',
        region: 'eu-west-1',
        endpointUrl: 'https://vpce-1.sns.eu-west-1.vpce.amazonaws.com',
        roleArn: 'arn:aws:iam::123456789012:role/fanout-publish',
      },
      {},
      'arn:aws:sns:eu-west-1:123456789012:payments',
    ],
    [
      'EventBridge',
      { destination: { type: 'EventBridge', eventBridge: { eventBusName: 'payments', region: 'eu-west-1', detailType: 'stripe' } } },
      { type: 'EventBridge', eventBusName: 'payments', detailType: 'stripe', ...aws },
      {},
      'eventbridge://eu-west-1/payments',
    ],
    [
      'Kafka with TLS and SASL: the password and the CA apart',
      {
        destination: {
          type: 'Kafka',
          kafka: {
            bootstrapServers: ['kafka-0.kafka:9092', 'kafka-1.kafka:9092'],
            topic: 'payments.stripe',
            tls: { caBundleRef: ref('kafka-ca', 'ca.crt') },
            sasl: { mechanism: 'SCRAM-SHA-512', username: 'fanout', passwordSecretRef: ref('kafka-user', 'password') },
          },
        },
      },
      {
        type: 'Kafka',
        bootstrapServers: ['kafka-0.kafka:9092', 'kafka-1.kafka:9092'],
        topic: 'payments.stripe',
        tls: { caBundle: true },
        sasl: { mechanism: 'SCRAM-SHA-512', username: 'fanout' },
      },
      { caBundle: 'PEM', password: 'kafka-pw' },
      'kafka://kafka-0.kafka:9092,kafka-1.kafka:9092/payments.stripe',
    ],
    [
      'RabbitMQ',
      {
        destination: {
          type: 'RabbitMQ',
          rabbitMQ: {
            url: 'amqps://rabbitmq.messaging:5671/%2F',
            exchange: 'payments',
            username: 'fanout',
            passwordSecretRef: ref('rmq', 'pw'),
            tls: {},
          },
        },
      },
      {
        type: 'RabbitMQ',
        url: 'amqps://rabbitmq.messaging:5671/%2F',
        exchange: 'payments',
        routingKey: null,
        tls: { caBundle: false },
        username: 'fanout',
      },
      { password: 'rmq-pw' },
      'amqps://rabbitmq.messaging:5671/%2F exchange "payments"',
    ],
    [
      'NATS with a token',
      {
        destination: {
          type: 'NATS',
          nats: { servers: ['nats://nats.messaging:4222'], subject: 'payments.stripe', tokenSecretRef: ref('nats', 'token') },
        },
      },
      { type: 'NATS', servers: ['nats://nats.messaging:4222'], subject: 'payments.stripe', tls: null, username: null },
      { token: 'nats-token' },
      'nats://nats.messaging:4222/payments.stripe',
    ],
  ])('%s', async (_what, spec, destination, destinationSecrets, url) => {
    // what the schema (dev mode's validator) and the CRD accept
    expect([...Value.Errors(WebhookEndpointSpec, resource(spec).spec)]).toEqual([]);
    const { read } = secretsOf({
      'kafka-ca/ca.crt': 'PEM',
      'kafka-user/password': 'kafka-pw',
      'rmq/pw': 'rmq-pw',
      'nats/token': 'nats-token',
    });
    const row = await endpointRow(resource(spec), read);
    expect(row).toMatchObject({ destination, destinationSecrets, url });
    // the secrets stay out of what the row shows
    expect(JSON.stringify(row.destination)).not.toMatch(/pw|PEM|token"/);
  });

  it("reads the destination's Secrets from the endpoint's namespace only", async () => {
    const { asked, read } = secretsOf({});
    await expect(
      endpointRow(
        resource({
          destination: {
            type: 'Kafka',
            kafka: {
              bootstrapServers: ['k:9092'],
              topic: 't',
              sasl: { mechanism: 'PLAIN', username: 'u', passwordSecretRef: ref('elsewhere', 'pw') },
            },
          },
        }),
        async (ns, name, key) => {
          asked.push(`${ns}/${name}/${key}`);
          return undefined;
        },
      ),
    ).rejects.toMatchObject({
      code: 'secret_missing',
      message: expect.stringMatching(/^kafka\.sasl\.passwordSecretRef: Secret shop\/elsewhere/),
    });
    expect(asked).toEqual(['shop/elsewhere/pw']);
    void read;
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['HTTP without a url', { destination: { type: 'HTTP' } }, /^url is required for an HTTP destination/],
    ['no destination and no url', {}, /^url is required for an HTTP destination/],
    ['SQS without its block', { destination: { type: 'SQS' } }, /^destination\.sqs is required when destination\.type is SQS/],
    [
      "another type's block",
      {
        destination: {
          type: 'SQS',
          sqs: { queueUrl: 'https://q.example/1/q', region: 'eu-west-1' },
          sns: { topicArn: 'arn:aws:sns:eu-west-1:123456789012:t', region: 'eu-west-1' },
        },
      },
      /^destination\.sns is only read when destination\.type is SNS/,
    ],
    [
      'a url beside a queue',
      { url: 'https://orders.example/hook', destination: { type: 'SQS', sqs: { queueUrl: 'https://q.example/1/q', region: 'eu-west-1' } } },
      /^url is only for an HTTP destination/,
    ],
    [
      'Bearer auth for Kafka',
      {
        auth: { type: 'Bearer', secretRef: ref('t', 't') },
        destination: { type: 'Kafka', kafka: { bootstrapServers: ['k:9092'], topic: 't' } },
      },
      /^auth \(Basic, Bearer, OAuth2ClientCredentials\) is only for an HTTP destination/,
    ],
    [
      'a RabbitMQ user without its password',
      { destination: { type: 'RabbitMQ', rabbitMQ: { url: 'amqp://r:5672/', username: 'u' } } },
      /^rabbitMQ\.username and rabbitMQ\.passwordSecretRef go together/,
    ],
    [
      'a NATS token and a user',
      {
        destination: {
          type: 'NATS',
          nats: {
            servers: ['nats://n:4222'],
            subject: 's',
            username: 'u',
            passwordSecretRef: ref('n', 'p'),
            tokenSecretRef: ref('n', 't'),
          },
        },
      },
      /^nats: a tokenSecretRef or a username, not both/,
    ],
  ])('refuses %s, in the words of the CRD', async (_what, spec, message) => {
    await expect(endpointRow(resource(spec), secretsOf({ 'n/p': 'p', 'n/t': 't' }).read)).rejects.toMatchObject({
      kind: 'permanent',
      code: 'invalid_spec',
      message: expect.stringMatching(message),
    });
  });

  it('a signing applies to every destination', async () => {
    const row = await endpointRow(
      resource({
        signing: { type: 'HMAC', secretRef: ref('sig', 'key') },
        destination: { type: 'SQS', sqs: { queueUrl: 'https://q.example/1/q', region: 'eu-west-1' } },
      }),
      secretsOf({ 'sig/key': 'signing-secret' }).read,
    );
    expect(row).toMatchObject({ signingType: 'HMAC', signingSecret: 'signing-secret', destination: { type: 'SQS' } });
  });
});
