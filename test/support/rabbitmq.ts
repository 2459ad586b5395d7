import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freeLowPort } from '../../src/dev/ports.js';
import { provisionBroker, spawnBroker, startRestartable, type RestartableBroker } from './broker-process.js';

const run = promisify(execFile);
/** Debian's rabbitmq-server, run directly (its /usr/sbin wrapper would switch to the service's user) */
const serverPath = (): string => process.env.RABBITMQ_SERVER_PATH ?? '/usr/lib/rabbitmq/bin/rabbitmq-server';

export interface RabbitMq extends RestartableBroker {
  /** amqp://user:password@127.0.0.1:port/ of the broker's one user */
  url: string;
  port: number;
  username: string;
  password: string;
  /** the broker's max_message_size */
  maxMessageBytes: number;
}

/**
 * Debian's RabbitMQ as a node of its own: its own node name, AMQP, distribution and epmd ports,
 * data, logs and Erlang cookie under a temporary folder, so it meets neither the system's service
 * nor another test's node. One user (a random password); max_message_size small (64 KiB unless
 * said) so a test can exceed it.
 */
export async function startRabbitMq(opts: { maxMessageBytes?: number } = {}): Promise<RabbitMq> {
  provisionBroker('rabbitmq');
  const dir = await mkdtemp(path.join(tmpdir(), 'wf-rabbitmq-'));
  await mkdir(path.join(dir, 'mnesia'));
  await mkdir(path.join(dir, 'log'));
  const [port, distPort, epmdPort] = [await freeLowPort(), await freeLowPort(), await freeLowPort()];
  const username = 'publisher';
  const password = randomBytes(12).toString('hex');
  const maxMessageBytes = opts.maxMessageBytes ?? 65_536;
  await writeFile(
    path.join(dir, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${port}`,
      `max_message_size = ${maxMessageBytes}`,
      `default_user = ${username}`,
      `default_pass = ${password}`,
      'loopback_users = none',
      '',
    ].join('\n'),
  );
  await writeFile(path.join(dir, 'enabled_plugins'), '[].\n');
  const env: NodeJS.ProcessEnv = {
    // the Erlang cookie is written to HOME
    HOME: dir,
    RABBITMQ_NODENAME: `wf-test-${port}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    ERL_EPMD_PORT: String(epmdPort),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq'),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_LOGS: '-',
  };
  const server = await startRestartable({
    dir,
    spawn: () => spawnBroker({ name: 'RabbitMQ', command: serverPath(), args: [], env, cwd: dir, port }),
    // the Erlang VM started an epmd of its own on epmdPort; it outlives the node
    cleanup: async () => {
      await run('epmd', ['-kill'], { env: { ...process.env, ERL_EPMD_PORT: String(epmdPort) } }).catch(() => undefined);
    },
  });
  return { url: `amqp://${username}:${password}@127.0.0.1:${port}/`, port, username, password, maxMessageBytes, ...server };
}
