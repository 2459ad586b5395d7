import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** An HTTPS receiver on 127.0.0.1 that answers every request 204. */
export interface HttpsReceiver {
  /** https://127.0.0.1:PORT/hook */
  url: string;
  /** one entry a request, in order: the CN of the client certificate it came with ('' when none was asked for) */
  clients: string[];
  /** the server itself: to rotate its certificate (setSecureContext) or drop kept-alive connections */
  server: Server;
  close(): Promise<void>;
}

/**
 * Starts an HTTPS receiver with the server certificate `cert`/`key` (PEM files, as TestPki issues
 * them). With `clientCa` it requires a client certificate of that CA (mTLS): no handshake without one.
 */
export async function startHttpsReceiver(opts: { cert: string; key: string; clientCa?: string }): Promise<HttpsReceiver> {
  const clients: string[] = [];
  const mtls = opts.clientCa === undefined ? {} : { ca: readFileSync(opts.clientCa, 'utf8'), requestCert: true, rejectUnauthorized: true };
  const server = createServer({ cert: readFileSync(opts.cert, 'utf8'), key: readFileSync(opts.key, 'utf8'), ...mtls }, (req, res) => {
    clients.push(opts.clientCa === undefined ? '' : String((req.socket as TLSSocket).getPeerCertificate().subject.CN));
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    clients,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
