import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { DestinationTarget } from '../src/delivery/destination.js';
import type { BenchDestinations } from './e2e-bench.js';

// What one send costs each destination on its own (issue 43, item 7): the end-to-end rounds of
// `npm run bench` put a Kafka and an SQS endpoint beside HTTP's, but a send is a small part of a
// delivery's CPU there (Temporal, the database), well inside the rounds' spread. Here the worker's
// destinations run alone in a child process (bench/destination-send-child.ts), each sending the
// same messages in alternating blocks; the child's CPU per send is the destination's own: the
// receiver, fauxqs and Kafka run in other processes.
//
//   npx tsx bench/destination-send.ts [sends per block=500] [blocks=4] [concurrency=10]
//   (starts a receiver, fauxqs and Kafka itself; Kafka's jars: scripts/tools/brokers.sh kafka)
//   DESTINATION_SEND_ONLY=http,sqs,sqs-sdk-signer,sqs-sdk: SQS's direct POST signed by us, the same signed
//   by the SDK's signer, and the SDK's send() (AWS_SQS_SEND) side by side
//   AWS_SQS_BATCH=off DESTINATION_SEND_ONLY=sqs,sqs-batch ... 50: the direct POST with AWS_SQS_BATCH off
//   and on side by side (batches form only beyond 4 requests in flight: give a concurrency well above, 50)

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL('./destination-send-child.ts', import.meta.url));

export interface DestinationSendInput {
  targets: Record<string, DestinationTarget>;
  /** sends per destination per block */
  sends: number;
  blocks: number;
  /** sends in flight at once (the worker's activities overlap) */
  concurrency: number;
  /** sends per destination before the measured blocks (the clients' first use) */
  warmup: number;
}

export type DestinationSendResult = Record<
  string,
  {
    /** the child's CPU (user + system, every thread) per send, ms, over every block */
    cpuMsPerSend: number;
    /** of which the kernel's (system time: the socket writes and reads) */
    systemMsPerSend: number;
    /** the same per block, ms: their spread is the noise */
    perBlock: number[];
    sendsPerS: number;
    sends: number;
  }
>;

/** What the child sends to: the bench's receiver, and the destination rounds' Kafka topic and SQS queue. */
export function sendTargets(receiverUrl: string, d: BenchDestinations): Record<string, DestinationTarget> {
  const { kafka, sqs } = { kafka: d.kafka.to, sqs: d.sqs.to };
  if (kafka.type !== 'Kafka' || sqs.type !== 'SQS') throw new Error('the destination rounds are a Kafka topic and an SQS queue');
  return {
    http: {
      type: 'HTTP',
      url: `${receiverUrl}/bench-send`,
      method: 'POST',
      auth: { type: 'NONE', username: null, secret: null },
      customHeaders: {},
      retryOnStatus: [],
    },
    kafka: { ...kafka, secrets: {} },
    sqs,
  };
}

/** Runs the child once with these targets; its CPU per send by target name. */
export async function measureDestinationSends(
  targets: Record<string, DestinationTarget>,
  opts: Partial<Omit<DestinationSendInput, 'targets'>> & { env?: Record<string, string>; nodeFlags?: string[] } = {},
): Promise<DestinationSendResult> {
  const input: DestinationSendInput = {
    targets,
    sends: opts.sends ?? 500,
    blocks: opts.blocks ?? 4,
    concurrency: opts.concurrency ?? 10,
    warmup: opts.warmup ?? 200,
  };
  const { stdout } = await run(process.execPath, [...(opts.nodeFlags ?? []), '--import', 'tsx', CHILD], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      // the worker's AWS identity in the bench (fauxqs takes any)
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      ...opts.env,
      DESTINATION_SEND_INPUT: JSON.stringify(input),
    },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 30 * 60_000,
  });
  const last = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as DestinationSendResult;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [sends = 500, blocks = 4, concurrency = 10] = process.argv.slice(2).map(Number);
  const { startFauxqs } = await import('fauxqs');
  const { CreateQueueCommand, SQSClient } = await import('@aws-sdk/client-sqs');
  const { startKafka } = await import('../test/support/kafka.js');
  const { startReceiver } = await import('./receiver.js');
  const receiver = await startReceiver();
  const fauxqs = await startFauxqs({ port: 0, logger: false });
  // Kafka's own flush policy, as a production cluster runs (replicas, not a flush per message, keep
  // what acks=all acknowledged): the tests' flush of each message makes every acknowledgement 5-8 ms
  const kafka = await startKafka({ maxMessageBytes: 1024 * 1024, flushEachMessage: false });
  try {
    await kafka.createTopic('bench-destination');
    const endpointUrl = `http://127.0.0.1:${fauxqs.port}`;
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: endpointUrl,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'bench-destination' }));
    sqs.destroy();
    if (!QueueUrl) throw new Error('fauxqs returned no queue URL');
    const only = (process.env.DESTINATION_SEND_ONLY ?? 'http,kafka,sqs').split(',');
    const all = sendTargets(receiver.url, {
      kafka: { to: { type: 'Kafka', bootstrapServers: [kafka.bootstrap], topic: 'bench-destination', tls: null, sasl: null }, address: '' },
      sqs: { to: { type: 'SQS', queueUrl: QueueUrl, region: 'us-east-1', endpointUrl, roleArn: null }, address: '' },
    });
    // DESTINATION_SEND_ONLY=http,sqs,sqs-sdk-signer,sqs-sdk,sqs-batch: SQS's ways in the same blocks
    const sqsTarget = all.sqs as DestinationTarget;
    const targets = Object.fromEntries(
      Object.entries({ ...all, 'sqs-sdk-signer': sqsTarget, 'sqs-sdk': sqsTarget, 'sqs-batch': sqsTarget }).filter(([name]) =>
        only.includes(name),
      ),
    );
    const flags = (process.env.DESTINATION_SEND_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
    const r = await measureDestinationSends(targets, { sends, blocks, concurrency, nodeFlags: flags });
    const http = r.http?.cpuMsPerSend;
    for (const [name, m] of Object.entries(r)) {
      console.log(
        `${name.padEnd(14)} ${m.cpuMsPerSend.toFixed(3)} ms CPU per send (${m.systemMsPerSend.toFixed(3)} system; blocks: ${m.perBlock.map((x) => x.toFixed(3)).join(', ')}), ` +
          `${m.sendsPerS.toFixed(0)} sends/s${http === undefined ? '' : `, x${(m.cpuMsPerSend / http).toFixed(2)} of HTTP's`}`,
      );
    }
  } finally {
    await kafka.stop();
    await fauxqs.stop();
    await receiver.close();
  }
}
