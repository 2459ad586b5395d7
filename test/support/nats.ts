import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freeLowPort } from '../../src/dev/ports.js';
import { provisionBroker, spawnBroker, startRestartable, type RestartableBroker } from './broker-process.js';

const serverPath = (): string => process.env.NATS_SERVER_PATH ?? 'nats-server';

export interface NatsServer extends RestartableBroker {
  /** nats://127.0.0.1:port */
  url: string;
  port: number;
  username: string;
  password: string;
  /** the server's max_payload */
  maxPayloadBytes: number;
}

/**
 * Debian's nats-server as a process of its own on a free port, JetStream on with its store in a
 * temporary folder, one user (a random password), max_payload small (64 KiB unless said).
 */
export async function startNats(opts: { maxPayloadBytes?: number } = {}): Promise<NatsServer> {
  provisionBroker('nats');
  const dir = await mkdtemp(path.join(tmpdir(), 'wf-nats-'));
  const port = await freeLowPort();
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
  const server = await startRestartable({
    dir,
    spawn: () => spawnBroker({ name: 'nats-server', command: serverPath(), args: ['-c', config], port, timeoutMs: 30_000 }),
  });
  return { url: `nats://127.0.0.1:${port}`, port, username, password, maxPayloadBytes, ...server };
}
