import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/** Requests under this path have their body's `id` noted with the time they arrived (the latency phase). */
export const TRACKED_PATH = '/latency/';
/** Under this path the first request of each (path, body id) is answered 503, the next ones 200 (BENCH_E2E_FAIL_FIRST). */
export const FLAKY_PATH = '/flaky/';

/**
 * Milliseconds on the monotonic clock (process.hrtime): the same clock in every process of the
 * machine, so an arrival noted by a receiver in another process compares with this one's times.
 */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface Receiver {
  url: string;
  /** requests answered so far */
  count(): Promise<number>;
  /** monotonicMs() at which a tracked request with each body id arrived (the first one); undefined: not yet */
  arrivedAt(ids: readonly string[]): Promise<Array<number | undefined>>;
  /** the receiver's own process (startReceiverProcess): its CPU is not webhook-fanout's; absent: this process */
  pid?: number;
  close(): Promise<void>;
}

/** The downstream endpoint of both e2e benchmarks, in this process: reads the body, answers 200 at once. */
export async function startReceiver(): Promise<Receiver> {
  let count = 0;
  const arrivals = new Map<string, number>();
  const refused = new Set<string>();
  const server = createServer((req, res) => {
    const tracked = req.url?.startsWith(TRACKED_PATH) === true;
    const flaky = req.url?.startsWith(FLAKY_PATH) === true;
    // the arrival is the request's head: what the body adds is the same for any sender
    const at = tracked ? monotonicMs() : 0;
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
    count: () => Promise.resolve(count),
    arrivedAt: (ids) => Promise.resolve(ids.map((id) => arrivals.get(id))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The CPU group of the receiver's own process (startReceiverProcess): not webhook-fanout's. */
export const RECEIVER_GROUP = 'receiver';

/** What the parent asks the receiver's process (bench/receiver-process.ts), and what it answers. */
type Question = { ask: 'count' } | { ask: 'arrivedAt'; ids: string[] };
export type ReceiverQuestion = Question & { id: number };
export type ReceiverAnswer = { ready: string } | { id: number; count: number } | { id: number; arrivedAt: Array<number | null> };

const RECEIVER_PROCESS = fileURLToPath(new URL('./receiver-process.ts', import.meta.url));

/**
 * The same receiver in a process of its own, as the brokers of the other destinations are (Kafka's
 * JVM, the queue's fauxqs): its CPU apart from the bench's and from ours, and its answers not
 * waiting on the bench's event loop (the publisher, the polling). Asked over IPC.
 */
export async function startReceiverProcess(): Promise<Receiver> {
  const child = fork(RECEIVER_PROCESS, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiting = new Map<number, (a: ReceiverAnswer) => void>();
  let nextId = 1;
  const url = await new Promise<string>((resolve, reject) => {
    child.on('message', (a: ReceiverAnswer) => {
      if ('ready' in a) resolve(a.ready);
      else waiting.get(a.id)?.(a);
    });
    child.once('exit', (code) => reject(new Error(`bench/receiver-process.ts exited with ${String(code)} before listening`)));
  });
  if (child.pid === undefined) throw new Error('could not start bench/receiver-process.ts');
  const ask = (q: Question): Promise<ReceiverAnswer> =>
    new Promise<ReceiverAnswer>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, (a) => {
        waiting.delete(id);
        resolve(a);
      });
      child.send({ ...q, id } satisfies ReceiverQuestion, (err) => err && reject(err));
    });
  return {
    url,
    pid: child.pid,
    count: async () => {
      const a = await ask({ ask: 'count' });
      return 'count' in a ? a.count : 0;
    },
    arrivedAt: async (ids) => {
      const a = await ask({ ask: 'arrivedAt', ids: [...ids] });
      return 'arrivedAt' in a ? a.arrivedAt.map((t) => t ?? undefined) : ids.map(() => undefined);
    },
    close: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
