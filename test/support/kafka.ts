import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { freeLowPort } from '../../src/dev/ports.js';
import { provisionBroker, spawnBroker, startRestartable, type RestartableBroker } from './broker-process.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import { eventually } from './wait.js';

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** scripts/tools/brokers.sh's version, and where it puts Kafka's jars (KAFKA_LIBS_DIR overrides) */
const KAFKA_VERSION = '4.1.1';
const libsDir = (): string => process.env.KAFKA_LIBS_DIR ?? path.join(REPO_ROOT, `.cache/kafka/${KAFKA_VERSION}/lib`);
const classpath = (): string => `${libsDir()}/*`;
const JVM = ['-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn'];

/** A SCRAM user the broker knows (created when its storage is formatted). */
export interface KafkaUser {
  mechanism: 'SCRAM-SHA-512';
  username: string;
  password: string;
}

/** A broker added to a KafkaBroker's cluster (a node of its own, PLAINTEXT only), which a test stops and starts on its own. */
export interface KafkaNode extends RestartableBroker {
  nodeId: number;
  /** host:port of its PLAINTEXT listener */
  bootstrap: string;
}

export interface KafkaBroker extends RestartableBroker {
  /** host:port of the PLAINTEXT listener */
  bootstrap: string;
  /** host:port of the SASL_PLAINTEXT listener (SCRAM-SHA-512; `user` may publish) */
  saslBootstrap: string;
  user: KafkaUser;
  /**
   * host:port of a PLAINTEXT listener reached through `proxy` (the broker advertises the proxy's
   * port there, so the client's every connection goes through it): a test stalls or cuts the
   * network to the broker while the broker itself runs on
   */
  proxiedBootstrap: string;
  proxy: TcpProxy;
  /** the broker's message.max.bytes */
  maxMessageBytes: number;
  /** changes `user`'s SCRAM password on the broker (kafka-configs, a rotation); connections already authenticated stay */
  setPassword(password: string): Promise<void>;
  /** creates a topic (auto-creation is off: an unknown topic is an error, as in production) */
  createTopic(name: string, partitions?: number, configs?: Record<string, string>): Promise<void>;
  /**
   * starts another broker in this cluster (node 2, 3, ...: broker only, the first node stays the
   * controller), ready once the cluster's metadata names it; a topic placed on it alone
   * (createTopics' `assignments`) has no leader while it is stopped. Stopped by the caller.
   */
  addBroker(): Promise<KafkaNode>;
  /** reads a topic (or every topic a pattern matches) from its beginning with Kafka's own console consumer (the Java client) */
  consume(topic: string | RegExp, count: number, timeoutMs?: number): Promise<ConsumedRecord[]>;
}

/** One record as Kafka's console consumer printed it. */
export interface ConsumedRecord {
  partition: number;
  offset: number;
  key: string | null;
  headers: Record<string, string>;
  value: string;
}

// separators the records' own text never holds (ASCII's record, unit and group separators)
const RS = '\u001e';
const US = '\u001f';
const GS = '\u001d';
/** what the consumer prints for a null key */
const NULL = '\u0018';

/**
 * Apache Kafka 4 in KRaft mode, one combined broker and controller on loopback ports of its own,
 * from the jars scripts/tools/brokers.sh fetched from Maven Central: `kafka-storage format`
 * (StorageTool, with a SCRAM user) then kafka.Kafka. Topic auto-creation is off and
 * message.max.bytes is small (64 KiB unless said) so the tests can meet both errors. Each message
 * is flushed to disk before it is acknowledged, unless `flushEachMessage: false` (Kafka's default,
 * the OS flushing: what the benchmarks measure; an acknowledgement then takes well under a
 * millisecond here, against 5 to 8 with a flush each).
 */
export async function startKafka(opts: { maxMessageBytes?: number; flushEachMessage?: boolean } = {}): Promise<KafkaBroker> {
  provisionBroker('kafka');
  const dir = await mkdtemp(path.join(tmpdir(), 'wf-kafka-'));
  // below the kernel's ephemeral range: a broker a test stops for 30 s binds its ports again, and a
  // client's outgoing connection may have been given one of them meanwhile (a restart's BindException in .ci/run)
  const [port, controllerPort, saslPort, proxiedPort] = [
    await freeLowPort(),
    await freeLowPort(),
    await freeLowPort(),
    await freeLowPort(),
  ];
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: proxiedPort });
  const maxMessageBytes = opts.maxMessageBytes ?? 65_536;
  const user: KafkaUser = { mechanism: 'SCRAM-SHA-512', username: 'publisher', password: randomBytes(12).toString('hex') };
  /** a node's server.properties: its roles, listeners and data; the cluster's quorum, limits and flushing */
  const properties = (node: { id: number; roles: string; listeners: string; advertised: string; protocols: string; dir: string }) => [
    `process.roles=${node.roles}`,
    `node.id=${node.id}`,
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=${node.listeners}`,
    `advertised.listeners=${node.advertised}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `listener.security.protocol.map=${node.protocols}`,
    `log.dirs=${path.join(node.dir, 'data')}`,
    'auto.create.topics.enable=false',
    `message.max.bytes=${maxMessageBytes}`,
    // every message on disk at once: a broker SIGKILLed by a test loses nothing it acknowledged
    ...(opts.flushEachMessage === false ? [] : ['log.flush.interval.messages=1']),
  ];
  const config = path.join(dir, 'server.properties');
  await writeFile(
    config,
    [
      ...properties({
        id: 1,
        roles: 'broker,controller',
        listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort},SASL_PLAINTEXT://127.0.0.1:${saslPort},PROXIED://127.0.0.1:${proxiedPort}`,
        advertised: `PLAINTEXT://127.0.0.1:${port},SASL_PLAINTEXT://127.0.0.1:${saslPort},PROXIED://127.0.0.1:${proxy.port}`,
        protocols: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,PROXIED:PLAINTEXT',
        dir,
      }),
      'sasl.enabled.mechanisms=SCRAM-SHA-512',
      'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'num.partitions=1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      '',
    ].join('\n'),
  );
  const storage = (...args: string[]) =>
    run('java', [...JVM, '-cp', classpath(), 'kafka.tools.StorageTool', ...args], { timeout: 120_000 });
  const clusterId = (await storage('random-uuid')).stdout.trim();
  await storage('format', '-t', clusterId, '-c', config, '--add-scram', `SCRAM-SHA-512=[name=${user.username},password=${user.password}]`);

  const bootstrap = `127.0.0.1:${port}`;
  /** listening is not serving yet: the metadata answers once the controller elected itself, and names a broker once it registered */
  const serving = (at: string, nodeId: number) => () =>
    eventually(
      async () => {
        const admin = new Admin({ clientId: 'wf-test-admin', bootstrapBrokers: [at], retries: 0 });
        try {
          const md = await admin.metadata({ topics: [] });
          return md.brokers.has(nodeId);
        } finally {
          await admin.close();
        }
      },
      { timeoutMs: 60_000, what: `Kafka node ${nodeId} on ${at} to answer metadata` },
    );
  const server = await startRestartable({
    dir,
    cleanup: () => proxy.close(),
    spawn: () => spawnBroker({ name: 'Kafka', command: 'java', args: [...JVM, '-cp', classpath(), 'kafka.Kafka', config], port }),
    ready: serving(bootstrap, 1),
  });
  let nodes = 1;
  return {
    bootstrap,
    saslBootstrap: `127.0.0.1:${saslPort}`,
    user,
    proxiedBootstrap: `127.0.0.1:${proxy.port}`,
    proxy,
    maxMessageBytes,
    async setPassword(password) {
      await run(
        'java',
        [
          ...JVM,
          '-cp',
          classpath(),
          'kafka.admin.ConfigCommand',
          '--bootstrap-server',
          bootstrap,
          '--alter',
          '--entity-type',
          'users',
          '--entity-name',
          user.username,
          '--add-config',
          `${user.mechanism}=[password=${password}]`,
        ],
        { timeout: 60_000 },
      );
      user.password = password;
    },
    async createTopic(name, partitions = 1, configs = {}) {
      const admin = new Admin({ clientId: 'wf-test-admin', bootstrapBrokers: [bootstrap] });
      try {
        await admin.createTopics({
          topics: [name],
          partitions,
          replicas: 1,
          configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
        });
      } finally {
        await admin.close();
      }
    },
    async addBroker() {
      const nodeId = ++nodes;
      const nodeDir = await mkdtemp(path.join(tmpdir(), `wf-kafka-${nodeId}-`));
      const nodePort = await freeLowPort();
      const nodeConfig = path.join(nodeDir, 'server.properties');
      const listener = `PLAINTEXT://127.0.0.1:${nodePort}`;
      const node = { id: nodeId, roles: 'broker', listeners: listener, advertised: listener, dir: nodeDir };
      await writeFile(nodeConfig, [...properties({ ...node, protocols: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT' }), ''].join('\n'));
      await storage('format', '-t', clusterId, '-c', nodeConfig);
      const nodeBootstrap = `127.0.0.1:${nodePort}`;
      const nodeServer = await startRestartable({
        dir: nodeDir,
        spawn: () =>
          spawnBroker({
            name: `Kafka node ${nodeId}`,
            command: 'java',
            args: [...JVM, '-cp', classpath(), 'kafka.Kafka', nodeConfig],
            port: nodePort,
          }),
        ready: serving(nodeBootstrap, nodeId),
      });
      return { nodeId, bootstrap: nodeBootstrap, ...nodeServer };
    },
    async consume(topic, count, timeoutMs = 30_000) {
      const { stdout } = await run(
        'java',
        [
          ...JVM,
          '-cp',
          classpath(),
          'org.apache.kafka.tools.consumer.ConsoleConsumer',
          '--bootstrap-server',
          bootstrap,
          ...(typeof topic === 'string' ? ['--topic', topic] : ['--include', topic.source]),
          '--from-beginning',
          '--max-messages',
          String(count),
          '--timeout-ms',
          String(timeoutMs),
          ...['print.partition=true', 'print.offset=true', 'print.key=true', 'print.headers=true', 'print.value=true'].flatMap((p) => [
            '--property',
            p,
          ]),
          ...[`key.separator=${US}`, `line.separator=${RS}`, `headers.separator=${GS}`, `null.literal=${NULL}`].flatMap((p) => [
            '--property',
            p,
          ]),
        ],
        { timeout: timeoutMs + 60_000, maxBuffer: 64 * 1024 * 1024 },
      ).catch((err: { stdout?: string; stderr?: string; message: string }) => {
        // the consumer exits non-zero when it times out with fewer records: what it read is the answer
        if (err.stdout !== undefined && /TimeoutException|Processed a total/.test(err.stderr ?? '')) return { stdout: err.stdout };
        throw new Error(`Kafka's console consumer failed: ${err.message}\n${err.stderr ?? ''}`);
      });
      return stdout
        .split(RS)
        .filter((r) => r !== '')
        .map(parseRecord);
    },
    ...server,
  };
}

/** "Partition:0<US>Offset:3<US>h1:v1<GS>h2:v2<US>key<US>value", as DefaultMessageFormatter prints it */
function parseRecord(text: string): ConsumedRecord {
  const [partition = '', offset = '', headers = '', key = '', ...value] = text.split(US);
  const parsedHeaders: Record<string, string> = {};
  if (headers !== 'NO_HEADERS' && headers !== '')
    for (const h of headers.split(GS)) {
      const i = h.indexOf(':');
      parsedHeaders[h.slice(0, i)] = h.slice(i + 1);
    }
  return {
    partition: Number(partition.replace('Partition:', '')),
    offset: Number(offset.replace('Offset:', '')),
    key: key === NULL ? null : key,
    headers: parsedHeaders,
    value: value.join(US),
  };
}
