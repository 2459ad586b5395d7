import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Requests under this path have their body's `id` noted with the time they arrived (the latency phase). */
export const TRACKED_PATH = '/latency/';
/** Under this path the first request of each (path, body id) is answered 503, the next ones 200 (BENCH_E2E_FAIL_FIRST). */
export const FLAKY_PATH = '/flaky/';

export interface Receiver {
  url: string;
  /** requests answered so far */
  count(): number;
  /** performance.now() at which a tracked request with this body id arrived (the first one) */
  arrivedAt(id: string): number | undefined;
  close(): Promise<void>;
}

/** The downstream endpoint of both e2e benchmarks: reads the body, answers 200 at once. */
export async function startReceiver(): Promise<Receiver> {
  let count = 0;
  const arrivals = new Map<string, number>();
  const refused = new Set<string>();
  const server = createServer((req, res) => {
    const tracked = req.url?.startsWith(TRACKED_PATH) === true;
    const flaky = req.url?.startsWith(FLAKY_PATH) === true;
    // the arrival is the request's head: what the body adds is the same for any sender
    const at = performance.now();
    const chunks: Buffer[] = [];
    if (tracked || flaky) req.on('data', (c: Buffer) => chunks.push(c));
    else req.resume();
    req.on('end', () => {
      count++;
      const id = tracked || flaky ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown }).id : undefined;
      if (tracked && typeof id === 'string' && !arrivals.has(id)) arrivals.set(id, at);
      const key = `${req.url ?? ''} ${String(id)}`;
      if (flaky && !refused.has(key)) {
        refused.add(key);
        res.writeHead(503, { 'content-type': 'text/plain' }).end('try again');
        return;
      }
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
    arrivedAt: (id) => arrivals.get(id),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
