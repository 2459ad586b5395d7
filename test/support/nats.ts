import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/dev/ports.js';
import { provisionBroker, spawnBroker, type BrokerProcess } from './broker-process.js';

const serverPath = (): string => process.env.NATS_SERVER_PATH ?? 'nats-server';

export interface NatsServer {
  /** nats://127.0.0.1:port */
  url: string;
  port: number;
  username: string;
  password: string;
  /** the server's max_payload */
  maxPayloadBytes: number;
  /** the server stops; its JetStream store stays for start() */
  halt(): Promise<void>;
  /** starts it again on the same port and store */
  start(): Promise<void>;
  /** stops it and deletes its store */
  stop(): Promise<void>;
}

/**
 * Debian's nats-server as a process of its own on a free port, JetStream on with its store in a
 * temporary folder, one user (a random password), max_payload small (64 KiB unless said).
 */
export async function startNats(opts: { maxPayloadBytes?: number } = {}): Promise<NatsServer> {
  provisionBroker('nats');
  const dir = await mkdtemp(path.join(tmpdir(), 'wf-nats-'));
  const port = await freePort();
  const username = 'publisher';
  const password = randomBytes(12).toString('hex');
  const maxPayloadBytes = opts.maxPayloadBytes ?? 65_536;
  const config = path.join(dir, 'nats.conf');
  await writeFile(
    config,
    [
      `listen: 127.0.0.1:${port}`,
      `max_payload: ${maxPayloadBytes}`,
      `jetstream: { store_dir: ${JSON.stringify(path.join(dir, 'jetstream'))}, max_memory_store: 64MB, max_file_store: 256MB }`,
      `authorization: { users: [ { user: ${username}, password: ${JSON.stringify(password)} } ] }`,
      '',
    ].join('\n'),
  );
  let server: BrokerProcess | undefined;
  const start = async (): Promise<void> => {
    server = await spawnBroker({ name: 'nats-server', command: serverPath(), args: ['-c', config], port, timeoutMs: 30_000 });
  };
  const halt = async (): Promise<void> => {
    await server?.stop();
    server = undefined;
  };
  try {
    await start();
  } catch (err) {
    await halt();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    username,
    password,
    maxPayloadBytes,
    halt,
    start,
    async stop() {
      await halt();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
