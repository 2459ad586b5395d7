import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from './wait.js';

/** What the receiver answers to one request. */
export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** wait this long before answering (a timeout test makes it longer than the endpoint's) */
  delayMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** epoch ms when the request arrived / when the answer was sent (undefined if never sent) */
  startedAt: number;
  finishedAt?: number;
}

/**
 * n is the 0-based index of the request; an array script repeats its last reply. A test that must
 * answer in its own way (stream, hang, destroy the socket) gives a `handler`: it is called once the
 * body is read, and writes the response itself.
 */
export type Script =
  | Reply[]
  | ((n: number, req: RecordedRequest) => Reply | Promise<Reply>)
  | { handler: (req: RecordedRequest, res: ServerResponse, raw: IncomingMessage) => void };

export interface Receiver {
  /** http://127.0.0.1:PORT/hook */
  url: string;
  /** http://127.0.0.1:PORT, for a test that picks its own path */
  origin: string;
  port: number;
  requests: RecordedRequest[];
  /** TCP connections accepted, whether or not a request followed */
  connections(): number;
  setScript(script: Script): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A real HTTP endpoint on 127.0.0.1 that records every request and answers from a script. */
export async function startReceiver(initial: Script = [{ status: 200, body: 'ok' }]): Promise<Receiver> {
  let script = initial;
  const requests: RecordedRequest[] = [];

  const pick = async (n: number, rec: RecordedRequest, s: Exclude<Script, { handler: unknown }>): Promise<Reply> => {
    if (typeof s === 'function') return s(n, rec);
    const reply = s[Math.min(n, s.length - 1)];
    if (!reply) throw new Error('empty receiver script');
    return reply;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const rec: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.alloc(0),
      startedAt: Date.now(),
    };
    const n = requests.push(rec) - 1;
    rec.body = await readBody(req);
    const current = script;
    if ('handler' in current) {
      current.handler(rec, res, req);
      return;
    }
    const reply = await pick(n, rec, current);
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return; // the client gave up (timeout)
    res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
    res.end(reply.body ?? '');
    rec.finishedAt = Date.now();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(599);
      res.end(String(err));
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/hook`,
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    connections: () => connections,
    setScript(s) {
      script = s;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A URL on a port where nothing listens (bound once, then released): connection refused. */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}
