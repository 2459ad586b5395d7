import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OutboundRequest } from '../../src/delivery/types.js';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** the body exactly as it arrived */
  body: Buffer;
}

export type Handler = (req: ReceivedRequest, res: ServerResponse, raw: IncomingMessage) => void;

export interface Receiver {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted, whether or not a request followed */
  connections: () => number;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 with a free port; records every request after reading its body. */
export async function startReceiver(handler: Handler = (_req, res) => res.end('ok')): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let connections = 0;
  const server: Server = createServer((raw, res) => {
    const chunks: Buffer[] = [];
    raw.on('data', (c: Buffer) => chunks.push(c));
    raw.on('end', () => {
      const req = { method: raw.method ?? '', url: raw.url ?? '', headers: raw.headers, body: Buffer.concat(chunks) };
      requests.push(req);
      handler(req, res, raw);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port that was free a moment ago and has nothing listening now. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function outbound(url: string, overrides: Partial<OutboundRequest> = {}): OutboundRequest {
  return {
    url,
    method: 'POST',
    body: Buffer.from('{"id":"evt_1","type":"payment.succeeded"}'),
    contentType: 'application/json',
    auth: { type: 'NONE', username: null, secret: null, signingSecret: null },
    customHeaders: {},
    timeoutMs: 5_000,
    retryOnStatus: [],
    meta: {
      eventId: '0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10',
      source: 'stripe',
      eventType: 'payment.succeeded',
      deliveryId: '5d2c0f3e-1a7b-4c55-8d8e-2b9f0a6c7e31',
      attempt: 1,
    },
    ...overrides,
  };
}
