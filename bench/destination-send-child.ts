// The child of bench/destination-send.ts: the worker's destinations (src/destinations, built as the
// worker builds them) alone in a process, each sending the same messages in alternating blocks, the
// CPU of this process per send measured around each block. What the receiver, fauxqs and Kafka
// spend is theirs, in other processes. Input as JSON in DESTINATION_SEND_INPUT; the result, JSON,
// is the last line of stdout.
import { randomUUID } from 'node:crypto';
import { AWS_SQS_SENDS } from '../src/config/settings.js';
import { createAddressPolicy } from '../src/delivery/address-policy.js';
import type { DestinationTarget } from '../src/delivery/destination.js';
import { cloudEventAttributes, formatBody } from '../src/delivery/body-format.js';
import { composeMessage, type Message } from '../src/delivery/message.js';
import { createDestinations } from '../src/destinations/index.js';
import { E2E_EVENT_TYPE, payloadOf } from './e2e-fixtures.js';
import type { DestinationSendInput, DestinationSendResult } from './destination-send.js';

const input = JSON.parse(process.env.DESTINATION_SEND_INPUT ?? '') as DestinationSendInput;
const SIGNING_KEY = `whsec_${Buffer.from('bench-destination-send-key-01234').toString('base64')}`;

/** One attempt's message as the deliver activity makes it (delivery/message.ts): a CloudEvent in binary mode, Standard Webhooks signed. */
function messageOf(i: number): Message {
  const id = randomUUID();
  const event = { id, source: 'bench-destination-send', type: E2E_EVENT_TYPE, time: new Date() };
  const shaped = formatBody(
    'CloudEventsBinary',
    { body: Buffer.from(payloadOf(`bench-send-${i}`)), contentType: 'application/json' },
    event,
  );
  return composeMessage({
    body: shaped.body,
    contentType: shaped.contentType,
    format: 'CloudEventsBinary',
    attributes: cloudEventAttributes(event),
    formatHeaders: shaped.headers,
    signing: { type: 'STANDARD_WEBHOOKS', secret: SIGNING_KEY },
    meta: { eventId: id, source: event.source, eventType: E2E_EVENT_TYPE, deliveryId: randomUUID(), attempt: 1 },
    orderingKey: null,
  });
}

// KAFKA_PRODUCE as the worker reads it (unset: coalesced); KAFKA_PRODUCE=single measures one request per record
const destinations = createDestinations({
  addressPolicy: createAddressPolicy(),
  kafkaProduce: process.env.KAFKA_PRODUCE === 'single' ? 'single' : 'coalesced',
  // AWS_SQS_SEND as the worker reads it (unset: direct)
  awsSqsSend: AWS_SQS_SENDS.find((s) => s === process.env.AWS_SQS_SEND) ?? 'direct',
  // AWS_SQS_BATCH as the worker reads it (unset: on)
  awsSqsBatch: !/^(0|false|no|off)$/i.test(process.env.AWS_SQS_BATCH ?? ''),
});
// the targets named `sqs-sdk-signer` and `sqs-sdk` go the other two SQS ways (the direct POST signed by
// the SDK's signer; the SDK's send()): the SQS ways A/B in the same blocks
const sdkSignerSqs = createDestinations({ addressPolicy: createAddressPolicy(), awsSqsSend: 'direct-sdk-signer' });
const sdkSqs = createDestinations({ addressPolicy: createAddressPolicy(), awsSqsSend: 'sdk' });
// the target named `sqs-batch`: the direct POST with AWS_SQS_BATCH on, beside `sqs` (AWS_SQS_BATCH=off for the A/B) in the same blocks
const batchSqs = createDestinations({ addressPolicy: createAddressPolicy(), awsSqsSend: 'direct', awsSqsBatch: true });
const OTHER_WAYS: Record<string, typeof destinations> = { 'sqs-sdk': sdkSqs, 'sqs-sdk-signer': sdkSignerSqs, 'sqs-batch': batchSqs };
const destinationsOf = (name: string) => OTHER_WAYS[name] ?? destinations;
const names = Object.keys(input.targets);

/** `n` sends to one target, `concurrency` at a time, as the worker's activities overlap; throws on any failure. */
async function sendAll(name: string, messages: readonly Message[]): Promise<void> {
  const target = input.targets[name] as DestinationTarget;
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < messages.length) {
      const message = messages[next++] as Message;
      const outcome = await destinationsOf(name).send(message, target, { timeoutMs: 10_000 });
      if (outcome.kind !== 'success') throw new Error(`${name}: ${outcome.kind}: ${'error' in outcome ? outcome.error : ''}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(input.concurrency, messages.length) }, lane));
}

const cpuMs = { ...Object.fromEntries(names.map((n) => [n, 0])) } as Record<string, number>;
const systemMs = { ...Object.fromEntries(names.map((n) => [n, 0])) } as Record<string, number>;
const wallMs = { ...Object.fromEntries(names.map((n) => [n, 0])) } as Record<string, number>;
const perBlockMs = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<string, number[]>;
try {
  // the first sends load each client (the AWS SDKs, Kafka's metadata and connection): not measured
  for (const name of names)
    await sendAll(
      name,
      Array.from({ length: input.warmup }, (_, i) => messageOf(i)),
    );
  for (let b = 0; b < input.blocks; b++) {
    const order = b % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const messages = Array.from({ length: input.sends }, (_, i) => messageOf(i));
      const t = process.cpuUsage();
      const w = performance.now();
      await sendAll(name, messages);
      const u = process.cpuUsage(t);
      const ms = (u.user + u.system) / 1000;
      cpuMs[name] = (cpuMs[name] ?? 0) + ms;
      systemMs[name] = (systemMs[name] ?? 0) + u.system / 1000;
      wallMs[name] = (wallMs[name] ?? 0) + performance.now() - w;
      perBlockMs[name]?.push(ms / input.sends);
    }
  }
} finally {
  await destinations.close();
  await sdkSqs.close();
  await sdkSignerSqs.close();
  await batchSqs.close();
}
const n = input.sends * input.blocks;
const result: DestinationSendResult = Object.fromEntries(
  names.map((name) => [
    name,
    {
      cpuMsPerSend: (cpuMs[name] ?? 0) / n,
      systemMsPerSend: (systemMs[name] ?? 0) / n,
      perBlock: perBlockMs[name] ?? [],
      sendsPerS: n / ((wallMs[name] ?? 1) / 1000),
      sends: n,
    },
  ]),
);
process.stdout.write(`${JSON.stringify(result)}\n`);
