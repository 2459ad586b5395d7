import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  url: string;
  /** requests answered so far */
  count(): number;
  close(): Promise<void>;
}

/** The downstream endpoint of both e2e benchmarks: reads the body, answers 200 at once. */
export async function startReceiver(): Promise<Receiver> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  // the worker's pool keeps sockets 4 s; the server must not close them first
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    count: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
