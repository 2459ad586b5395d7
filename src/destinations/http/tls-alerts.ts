import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';

/**
 * The TLS alert a receiver sent when it refused the handshake, kept for the attempt log. With
 * TLS 1.3 a receiver that wants a client certificate (or does not trust ours) sends its alert
 * ("certificate required", "unknown ca") after our side finished the handshake, then closes: Node
 * emits the alert as the socket's error, then its end, and undici reports the end ("other side
 * closed") over the alert. The connector below remembers an alert by the socket's addresses, which
 * undici's SocketError carries, so the outcome can name it (classify.ts).
 */
export interface TlsAlerts {
  /** wraps a connector: its sockets' alerts are remembered */
  connector(inner: buildConnector.connector): buildConnector.connector;
  /** the alert error behind a socket error of undici's, if its socket got one */
  alertOf(err: unknown): Error | undefined;
}

const ALERT_CODE = /^ERR_SSL_(?:TLSV1\d*|SSLV3)_ALERT_/;

/** How long an alert is kept after its socket closed: the request it failed is settled by then. */
const KEPT_MS = 10_000;

interface SocketInfo {
  localAddress?: string | undefined;
  localPort?: number | undefined;
  remoteAddress?: string | undefined;
  remotePort?: number | undefined;
}

const keyOf = (s: SocketInfo): string => `${s.localAddress ?? ''}:${s.localPort ?? ''}>${s.remoteAddress ?? ''}:${s.remotePort ?? ''}`;

export function createTlsAlerts(): TlsAlerts {
  const alerts = new Map<string, Error>();
  return {
    connector(inner) {
      return (options, callback) =>
        inner(options, (...args) => {
          const socket: Socket | null = args[1];
          if (socket) {
            // the addresses now: a closed socket no longer has them
            const key = keyOf(socket);
            socket.prependListener('error', (err: Error & { code?: unknown }) => {
              if (typeof err.code !== 'string' || !ALERT_CODE.test(err.code)) return;
              alerts.set(key, err);
              socket.once('close', () => setTimeout(() => alerts.delete(key), KEPT_MS).unref());
            });
          }
          callback(...args);
        });
    },
    alertOf(err) {
      for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
        const info = (e as { socket?: unknown }).socket;
        if ((e as { code?: unknown }).code === 'UND_ERR_SOCKET' && typeof info === 'object' && info !== null) {
          return alerts.get(keyOf(info as SocketInfo));
        }
      }
      return undefined;
    },
  };
}
