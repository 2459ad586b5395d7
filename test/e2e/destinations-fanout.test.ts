import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as connectNats } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { SIGNING_KEY, verifySignature } from '../destinations/broker-messages.js';
import { waitForBuilds } from '../support/builds.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startDevMode, type DevMode } from '../support/dev-mode.js';
import { basic, http } from '../support/http.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { startNats, type NatsServer } from '../support/nats.js';
import { startRabbitMq, type RabbitMq } from '../support/rabbitmq.js';
import { createQueue, drainQueue } from '../support/sqs-queues.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually, sleep } from '../support/wait.js';
import { startMotoBackend, type Backend } from '../transport/backends.js';

// Kafka's jars (Maven Central), RabbitMQ and NATS (Debian) come through the background queue
await waitForBuilds('kafka', 'rabbitmq', 'nats');

/**
 * Issue 43's "done when", as a user meets it: one source, seven WebhookEndpoints in a folder of
 * manifests that dev mode (`npm start`) reads, one per destination type (HTTP, Kafka, SQS, SNS,
 * EventBridge, RabbitMQ, NATS), webhooks POSTed to ingest and carried by the whole pipeline
 * (ingest, SNS/SQS transport, consumer, Temporal, worker). Each destination's consumer reads every
 * event with its own client, with the CloudEvents attributes and a signature the standardwebhooks
 * library verifies; NATS is stopped while half the events go out, and nothing is lost; each
 * endpoint's attempt log, read from the admin API, says what its broker answered.
 */

const SOURCE = 'payments';
const EVENTS = 12;
/** NATS down while the second half of the events is ingested (each broker's 30 s outage is tested alone, test/destinations) */
const OUTAGE_MS = 15_000;
const region = 'eu-west-1';
const awsKeys = { accessKeyId: 'test', secretAccessKey: 'test' };
const TYPES = ['HTTP', 'Kafka', 'SQS', 'SNS', 'EventBridge', 'RabbitMQ', 'NATS'] as const;
type DestinationType = (typeof TYPES)[number];

let dir: string;
let database: TestDatabase;
let dev: DevMode;
let receiver: Receiver;
let kafka: KafkaBroker;
let rabbit: RabbitMq;
let nats: NatsServer;
let moto: Backend;
let sqs: SQSClient;
const aws = { queue: '', snsQueue: '', busQueue: '', topicArn: '' };

/** What a consumer read, whatever its broker: the body, the CloudEvents attributes, the signature headers, what identifies the message. */
interface Read {
  body: string;
  ce: { id?: string; source?: string; type?: string; specversion?: string };
  signature: Record<string, string>;
  /** what the attempt log's receipt must say of this message; null: HTTP, which has none */
  receipt: Record<string, unknown> | null;
}

const secrets = { inbound: `in-${randomUUID()}` };

const credentialManifests = () => `apiVersion: v1
kind: Secret
metadata: {name: fanout-secrets}
stringData:
  inbound: ${JSON.stringify(secrets.inbound)}
  signing: ${JSON.stringify(SIGNING_KEY)}
  kafka: ${JSON.stringify(kafka.user.password)}
  rabbitmq: ${JSON.stringify(rabbit.password)}
  nats: ${JSON.stringify(nats.password)}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: payments}
spec:
  source: ${SOURCE}
  username: psp
  passwordSecretRef: {name: fanout-secrets, key: inbound}
`;

/** The seven endpoints, as a platform team would write them: one source, each in CloudEvents' binary mode, signed with Standard Webhooks. */
const endpointManifests = () => {
  const endpoint = (name: string, body: string) => `---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ${name}}
spec:
  source: ${SOURCE}
  format: CloudEventsBinary
  signing: {type: StandardWebhooks, secretRef: {name: fanout-secrets, key: signing}}
${body}`;
  return [
    endpoint('to-http', `  url: ${receiver.url}\n`),
    endpoint(
      'to-kafka',
      `  destination:
    type: Kafka
    kafka:
      bootstrapServers: [${kafka.saslBootstrap}]
      topic: payments
      sasl: {mechanism: SCRAM-SHA-512, username: ${kafka.user.username}, passwordSecretRef: {name: fanout-secrets, key: kafka}}
`,
    ),
    endpoint(
      'to-sqs',
      `  destination:
    type: SQS
    sqs: {queueUrl: ${JSON.stringify(aws.queue)}, region: ${region}, endpointUrl: ${JSON.stringify(moto.endpoint)}}
`,
    ),
    endpoint(
      'to-sns',
      `  destination:
    type: SNS
    sns: {topicArn: ${JSON.stringify(aws.topicArn)}, region: ${region}, endpointUrl: ${JSON.stringify(moto.endpoint)}}
`,
    ),
    endpoint(
      'to-eventbridge',
      `  destination:
    type: EventBridge
    eventBridge: {eventBusName: payments, region: ${region}, endpointUrl: ${JSON.stringify(moto.endpoint)}}
`,
    ),
    endpoint(
      'to-rabbitmq',
      `  destination:
    type: RabbitMQ
    rabbitMQ:
      url: amqp://127.0.0.1:${rabbit.port}/
      exchange: payments
      username: ${rabbit.username}
      passwordSecretRef: {name: fanout-secrets, key: rabbitmq}
`,
    ),
    // retried through the outage: 500 ms to 2 s apart, 40 attempts
    endpoint(
      'to-nats',
      `  maxAttempts: 40
  destination:
    type: NATS
    nats:
      servers: [${nats.url}]
      subject: payments.stripe
      username: ${nats.username}
      passwordSecretRef: {name: fanout-secrets, key: nats}
`,
    ),
  ].join('');
};

const ENDPOINT_OF: Record<DestinationType, string> = {
  HTTP: 'to-http',
  Kafka: 'to-kafka',
  SQS: 'to-sqs',
  SNS: 'to-sns',
  EventBridge: 'to-eventbridge',
  RabbitMQ: 'to-rabbitmq',
  NATS: 'to-nats',
};

/** The queues, topic, bus and rule a platform team has, made with the SDK: SNS and EventBridge read back through queues they deliver to. */
async function seedAws(): Promise<void> {
  const setup = { region, endpoint: moto.endpoint, credentials: awsKeys };
  const sns = new SNSClient(setup);
  const eb = new EventBridgeClient(setup);
  try {
    aws.queue = (await createQueue(sqs, 'payments')).url;
    const fromTopic = await createQueue(sqs, 'from-topic');
    aws.snsQueue = fromTopic.url;
    aws.topicArn = (await sns.send(new CreateTopicCommand({ Name: 'payments' }))).TopicArn!;
    // SNS's JSON envelope (no raw delivery): its MessageId is what the Publish answered
    await sns.send(new SubscribeCommand({ TopicArn: aws.topicArn, Protocol: 'sqs', Endpoint: fromTopic.arn }));
    const fromBus = await createQueue(sqs, 'from-bus');
    aws.busQueue = fromBus.url;
    await eb.send(new CreateEventBusCommand({ Name: 'payments' }));
    await eb.send(
      new PutRuleCommand({
        Name: 'all',
        EventBusName: 'payments',
        EventPattern: JSON.stringify({ source: [`/webhook-fanout/${SOURCE}`] }),
      }),
    );
    await eb.send(new PutTargetsCommand({ Rule: 'all', EventBusName: 'payments', Targets: [{ Id: 'q', Arn: fromBus.arn }] }));
  } finally {
    sns.destroy();
    eb.destroy();
  }
}

async function seedBrokers(): Promise<void> {
  await kafka.createTopic('payments', 3);
  const conn = await amqp.connect(rabbit.url);
  try {
    const ch = await conn.createChannel();
    // without a routingKey an unordered endpoint routes by the event's type
    await ch.assertExchange('payments', 'topic', { durable: true });
    await ch.assertQueue('ledger', { durable: true });
    await ch.bindQueue('ledger', 'payments', 'invoice.*');
  } finally {
    await conn.close();
  }
  const nc = await connectNats({ servers: nats.url, user: nats.username, pass: nats.password });
  try {
    await (await jetstreamManager(nc)).streams.add({ name: 'PAYMENTS', subjects: ['payments.>'] });
  } finally {
    await nc.close();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'wf-fanout-'));
  await chmod(dir, 0o755);
  const configDir = path.join(dir, 'manifests');
  await mkdir(configDir);
  // the brokers and dev mode start side by side; dev mode reads the endpoints once the brokers are there
  const started = await Promise.allSettled([
    startKafka().then((k) => (kafka = k)),
    startRabbitMq().then((r) => (rabbit = r)),
    startNats().then((n) => (nats = n)),
    startMotoBackend().then((m) => (moto = m)),
    startReceiver().then((r) => (receiver = r)),
    createTestDatabase().then(async (d) => {
      database = d;
      // the shared Postgres and Temporal, as a user points dev mode at theirs; a task queue of this file's own
      dev = await startDevMode({
        configDir,
        dataDir: path.join(dir, 'data'),
        env: {
          DATABASE_URL: d.url,
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_TASK_QUEUE: `fanout-e2e-${randomUUID()}`,
          CONSOLE_ENABLED: 'false',
          DELIVERY_BACKOFF_INITIAL_MS: '500',
          DELIVERY_BACKOFF_MAX_MS: '2000',
          // the worker's AWS identity (the SDK's default chain): moto takes any keys
          AWS_ACCESS_KEY_ID: awsKeys.accessKeyId,
          AWS_SECRET_ACCESS_KEY: awsKeys.secretAccessKey,
        },
      });
    }),
  ]);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  sqs = new SQSClient({ region, endpoint: moto.endpoint, credentials: awsKeys });
  await Promise.all([seedAws(), seedBrokers()]);
  await writeFile(path.join(configDir, 'credentials.yaml'), credentialManifests());
  await writeFile(path.join(configDir, 'endpoints.yaml'), endpointManifests());
}, 240_000);

afterAll(async () => {
  await dev?.stop();
  sqs?.destroy();
  await Promise.allSettled([kafka?.stop(), rabbit?.stop(), nats?.stop(), moto?.stop(), receiver?.close()]);
  await database?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface DeliveryRow {
  event_id: string;
  endpoint_id: string;
  status: string;
  attempts: number;
}
const deliveries = (): Promise<DeliveryRow[]> => database.db('webhook_delivery').select('event_id', 'endpoint_id', 'status', 'attempts');

async function ingest(n: number): Promise<{ id: string; body: string }[]> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const body = JSON.stringify({ id: `evt_${randomUUID().slice(0, 12)}`, type: 'invoice.paid', amount: 1000 + i });
    // the first one may come before ingest knows the credential dev mode just loaded: 401, nothing kept
    const res = await eventually(
      async () => {
        const r = await http(`${dev.url}/api/webhooks/${SOURCE}`, {
          headers: { authorization: basic('psp', secrets.inbound), 'content-type': 'application/json' },
          body,
        });
        if (r.status !== 200 && r.status !== 401) throw new Error(`${r.status} ${r.text}`);
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 30_000, what: 'ingest to accept the webhook' },
    );
    out.push({ id: (res.json() as { eventId: string }).eventId, body });
  }
  return out;
}

// ---- the consumers, each with its broker's own client ----------------------------------------

const webhookHeaders = (h: Record<string, unknown>): Record<string, string> => ({
  'webhook-id': String(h['webhook-id'] ?? ''),
  'webhook-timestamp': String(h['webhook-timestamp'] ?? ''),
  'webhook-signature': String(h['webhook-signature'] ?? ''),
});
const ceOf = (h: Record<string, unknown>, prefix: string): Read['ce'] => ({
  id: h[`${prefix}id`] as string | undefined,
  source: h[`${prefix}source`] as string | undefined,
  type: h[`${prefix}type`] as string | undefined,
  specversion: h[`${prefix}specversion`] as string | undefined,
});

function readHttp(): Read[] {
  return receiver.requests.map((r) => {
    const h = r.headers as Record<string, string>;
    return { body: r.body.toString(), ce: ceOf(h, 'ce-'), signature: webhookHeaders(h), receipt: null };
  });
}

async function readKafka(): Promise<Read[]> {
  // Kafka's own console consumer (the Java client), from the beginning; it stops 8 s after the last record
  const records = await kafka.consume('payments', EVENTS * 3, 8_000);
  return records.map((r) => ({
    body: r.value,
    ce: ceOf(r.headers, 'ce_'),
    signature: webhookHeaders(r.headers),
    receipt: { partition: r.partition, offset: String(r.offset) },
  }));
}

async function readRabbitMq(): Promise<Read[]> {
  const conn = await amqp.connect(rabbit.url);
  try {
    const ch = await conn.createChannel();
    const out: Read[] = [];
    for (;;) {
      const m = await ch.get('ledger', { noAck: true });
      if (m === false) return out;
      const h = (m.properties.headers ?? {}) as Record<string, unknown>;
      out.push({
        body: m.content.toString(),
        ce: ceOf(h, 'cloudEvents_'),
        signature: webhookHeaders(h),
        receipt: { messageId: m.properties.messageId as string },
      });
    }
  } finally {
    await conn.close();
  }
}

async function readNats(): Promise<Read[]> {
  const nc = await connectNats({ servers: nats.url, user: nats.username, pass: nats.password });
  try {
    const jsm = await jetstreamManager(nc);
    const { messages, first_seq: first } = (await jsm.streams.info('PAYMENTS')).state;
    const out: Read[] = [];
    for (let seq = first; seq < first + messages; seq++) {
      const m = await jsm.streams.getMessage('PAYMENTS', { seq });
      if (!m) continue;
      const h: Record<string, string> = {};
      for (const [k, v] of m.header) h[k] = v[0] ?? '';
      out.push({ body: m.string(), ce: ceOf(h, 'ce-'), signature: webhookHeaders(h), receipt: { sequence: String(m.seq) } });
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** An SQS or SNS message: its text, and its attributes (the CloudEvents ones, webhook-headers with the signature). */
const awsRead = (body: string, attributes: Record<string, string | undefined>, messageId: string | undefined): Read => ({
  body,
  ce: ceOf(attributes, 'ce-'),
  signature: webhookHeaders(JSON.parse(attributes['webhook-headers'] ?? '{}') as Record<string, unknown>),
  receipt: { messageId },
});

async function readSqs(): Promise<Read[]> {
  return (await drainQueue(sqs, aws.queue)).map((m) =>
    awsRead(m.Body ?? '', Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue])), m.MessageId),
  );
}

async function readSns(): Promise<Read[]> {
  return (await drainQueue(sqs, aws.snsQueue)).map((m) => {
    // SNS's envelope: the message, its attributes, the id Publish answered
    const envelope = JSON.parse(m.Body ?? '{}') as {
      MessageId: string;
      Message: string;
      MessageAttributes?: Record<string, { Value: string }>;
    };
    return awsRead(
      envelope.Message,
      Object.fromEntries(Object.entries(envelope.MessageAttributes ?? {}).map(([k, v]) => [k, v.Value])),
      envelope.MessageId,
    );
  });
}

async function readEventBridge(): Promise<Read[]> {
  return (await drainQueue(sqs, aws.busQueue)).map((m) => {
    const event = JSON.parse(m.Body ?? '{}') as {
      id: string;
      detail: Record<string, unknown> & { data: unknown; headers: Record<string, unknown> };
    };
    // EventBridge re-encodes the JSON (docs/destinations.md): the body's bytes are the compact JSON the source sent
    return {
      body: JSON.stringify(event.detail.data),
      ce: ceOf(event.detail, ''),
      signature: webhookHeaders(event.detail.headers),
      receipt: { messageId: event.id },
    };
  });
}

const READERS: Record<DestinationType, () => Read[] | Promise<Read[]>> = {
  HTTP: readHttp,
  Kafka: readKafka,
  SQS: readSqs,
  SNS: readSns,
  EventBridge: readEventBridge,
  RabbitMQ: readRabbitMq,
  NATS: readNats,
};

// ---- the admin API ---------------------------------------------------------------------------

interface ApiAttempt {
  attempt: number;
  outcome: string;
  responseStatus: number | null;
  error: string | null;
  receipt: Record<string, unknown> | null;
}

describe("issue 43's done-when: one source fanned out to seven destinations through dev mode", () => {
  it('every consumer reads every event once, with the CloudEvents attributes and a signature that verifies; NATS down mid-run loses nothing; each attempt log says what its broker answered', async () => {
    let token = await dev.token();
    // dev mode reloads the folder: the seven endpoints, with their types and targets (never a secret)
    const endpoints = await eventually(
      async () => {
        const res = await http(`${dev.url}/api/endpoints?source=${SOURCE}`, {
          method: 'GET',
          headers: { authorization: `Bearer ${token}` },
        });
        const items = (res.json() as { items: { id: string; name: string; destination: { type: string; target: string } }[] }).items;
        return items.length === TYPES.length ? { items, text: res.text } : undefined;
      },
      { timeoutMs: 30_000, what: 'dev mode to load the seven endpoints' },
    );
    for (const secret of [kafka.user.password, rabbit.password, nats.password, SIGNING_KEY]) expect(endpoints.text).not.toContain(secret);
    const idOf = {} as Record<DestinationType, string>;
    for (const type of TYPES) {
      const e = endpoints.items.find((x) => x.name === `default/${ENDPOINT_OF[type]}`);
      expect(e?.destination.type, ENDPOINT_OF[type]).toBe(type);
      idOf[type] = e!.id;
    }
    const typeOf = new Map(TYPES.map((t) => [idOf[t], t]));

    // half the events with every broker up
    const before = await ingest(EVENTS / 2);
    await eventually(async () => (await deliveries()).filter((d) => d.status === 'SUCCESS').length === (EVENTS / 2) * TYPES.length, {
      timeoutMs: 60_000,
      what: 'the first events delivered to the seven endpoints',
    });

    // NATS stops; the other half goes out meanwhile: the other six take it, NATS's deliveries retry
    await nats.halt();
    const haltedAt = Date.now();
    const during = await ingest(EVENTS / 2);
    const duringIds = new Set(during.map((e) => e.id));
    await eventually(
      async () => {
        const rows = (await deliveries()).filter((d) => duringIds.has(d.event_id));
        const others = rows.filter((d) => d.endpoint_id !== idOf.NATS);
        const toNats = rows.filter((d) => d.endpoint_id === idOf.NATS);
        return (
          others.length === (EVENTS / 2) * (TYPES.length - 1) &&
          others.every((d) => d.status === 'SUCCESS') &&
          toNats.length === EVENTS / 2 &&
          toNats.every((d) => d.attempts >= 2)
        );
      },
      { timeoutMs: 60_000, what: 'the six other destinations to take the events, and NATS deliveries to retry' },
    );
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - haltedAt)));
    const waiting = (await deliveries()).filter((d) => duringIds.has(d.event_id) && d.endpoint_id === idOf.NATS);
    expect(waiting.map((d) => d.status)).not.toContain('SUCCESS');
    await nats.start();
    await eventually(async () => (await deliveries()).filter((d) => d.status === 'SUCCESS').length === EVENTS * TYPES.length, {
      timeoutMs: 90_000,
      what: 'every delivery SUCCESS after NATS came back',
    });
    const all = [...before, ...during];
    const rows = await deliveries();
    expect(rows).toHaveLength(EVENTS * TYPES.length);

    // each consumer, with its own client
    const reads = Object.fromEntries(await Promise.all(TYPES.map(async (t) => [t, await READERS[t]()] as const))) as Record<
      DestinationType,
      Read[]
    >;

    // the attempt log of each delivery, from the admin API
    token = await dev.token();
    const get = async <T>(p: string): Promise<T> => {
      const res = await http(`${dev.url}${p}`, { method: 'GET', headers: { authorization: `Bearer ${token}` } });
      expect(res.status, `${p}: ${res.text}`).toBe(200);
      return res.json() as T;
    };
    for (const event of all) {
      const { deliveries: ds } = await get<{ deliveries: { endpointId: string; status: string; attemptsUrl: string }[] }>(
        `/api/events/${event.id}`,
      );
      expect(ds.map((d) => typeOf.get(d.endpointId)).sort()).toEqual([...TYPES].sort());
      for (const d of ds) {
        const type = typeOf.get(d.endpointId)!;
        const where = `${type}, event ${event.id}`;
        const attempts = (await get<{ items: ApiAttempt[] }>(d.attemptsUrl)).items;
        const success = attempts.filter((a) => a.outcome === 'SUCCESS');
        expect(success, where).toHaveLength(1);
        expect(attempts.at(-1)?.outcome, where).toBe('SUCCESS');

        // at-least-once: a copy per attempt that may have published at most; NATS de-duplicates on
        // Nats-Msg-Id (the event id), so there exactly one whatever the outage cut
        const copies = reads[type].filter((r) => r.ce.id === event.id);
        expect(copies.length, where).toBeGreaterThanOrEqual(1);
        expect(copies.length, where).toBeLessThanOrEqual(type === 'NATS' ? 1 : attempts.length);
        for (const read of copies) {
          expect(read.body, where).toBe(event.body);
          expect(read.ce, where).toEqual({ id: event.id, source: `/webhook-fanout/${SOURCE}`, type: 'invoice.paid', specversion: '1.0' });
          expect(read.signature['webhook-id'], where).toBe(event.id);
          expect(() => verifySignature(read.body, read.signature), where).not.toThrow();
        }
        // what the broker answered, in the attempt log: the message the consumer read
        if (type === 'HTTP') expect(success[0], where).toMatchObject({ responseStatus: 200, receipt: null });
        else
          expect(
            copies.map((r) => r.receipt),
            where,
          ).toContainEqual(success[0]?.receipt);
        if (type === 'NATS' && duringIds.has(event.id)) {
          // the outage in NATS's log: refused attempts retried, with the broker's reason, then the ack
          expect(attempts.length, where).toBeGreaterThanOrEqual(2);
          for (const a of attempts.slice(0, -1))
            expect(a, where).toMatchObject({ outcome: 'RETRYING', receipt: null, error: expect.stringMatching(/^broker_/) });
        }
      }
    }
    // nothing else reached a consumer
    for (const type of TYPES) {
      const ids = new Set(all.map((e) => e.id));
      expect(
        reads[type].filter((r) => !ids.has(r.ce.id ?? '')),
        type,
      ).toEqual([]);
    }
  }, 300_000);
});
