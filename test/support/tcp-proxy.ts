import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP forwarder in front of a real dependency (Postgres, a Kafka listener): `cut()` drops every
 * connection and refuses new ones, as an outage does, `restore()` lets them through again.
 * `stall()` keeps the connections open but forwards nothing either way (a leader slow or gone
 * without a reset): what was sent waits, unanswered, until `cut()` drops it. The dependency itself
 * keeps running, so the rest of the test still has it.
 */
export interface TcpProxy {
  port: number;
  stall(): void;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  let down = false;
  let stalled = false;
  const hold = ([client, upstream]: [Socket, Socket]): void => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const server: Server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const s of pair) {
      sockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        pairs.delete(pair);
      });
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (stalled) hold(pair);
    else {
      client.pipe(upstream);
      upstream.pipe(client);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stall() {
      stalled = true;
      for (const pair of pairs) hold(pair);
    },
    cut() {
      down = true;
      stalled = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      down = false;
      stalled = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
