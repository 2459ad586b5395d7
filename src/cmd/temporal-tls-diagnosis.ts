import { checkServerIdentity, connect, type ConnectionOptions } from 'node:tls';
import type { TemporalConnectionSettings } from '../config/tls.js';

/** Node's TLS error codes, and what each says about the configuration. */
const EXPLAINED: Record<string, string> = {
  SELF_SIGNED_CERT_IN_CHAIN: "the frontend's certificate does not chain to TEMPORAL_TLS_CA (a wrong or missing CA)",
  DEPTH_ZERO_SELF_SIGNED_CERT: "the frontend's certificate is self-signed and not TEMPORAL_TLS_CA",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the frontend's certificate does not chain to TEMPORAL_TLS_CA (a wrong or missing CA)",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the frontend's certificate does not chain to TEMPORAL_TLS_CA (a wrong or missing CA)",
  CERT_HAS_EXPIRED: "the frontend's certificate has expired",
  ERR_TLS_CERT_ALTNAME_INVALID:
    "the frontend's certificate does not name the address's host: set TEMPORAL_TLS_SERVER_NAME to a name it carries",
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'the frontend requires a client certificate: set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY',
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: 'the frontend refused the client certificate (not signed by a CA it accepts?)',
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: 'the frontend does not accept the client certificate: it is not signed by a CA in its clientCaFiles',
  ERR_SSL_WRONG_VERSION_NUMBER: 'the address does not speak TLS (a plaintext frontend: unset TEMPORAL_TLS and its files)',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'the address does not speak TLS (a plaintext frontend: unset TEMPORAL_TLS and its files)',
};

/**
 * Why a TLS connection to the frontend fails, in words that name the setting: the SDKs say
 * "Failed to connect before the deadline" (the client) or a transport error (the worker's core)
 * for a wrong CA or a missing client certificate alike. A handshake of our own with the same
 * files and server name tells them apart. undefined when it succeeds (the problem is elsewhere)
 * or nothing answers.
 */
export async function diagnoseTemporalTls(settings: TemporalConnectionSettings, timeoutMs = 3_000): Promise<string | undefined> {
  if (settings.tls === undefined) return undefined;
  const { tls } = settings;
  const [host = '', portText = '7233'] = splitAddress(settings.address);
  const servername = tls.serverNameOverride ?? (/^[\d.]+$|:/.test(host) ? undefined : host);
  const options: ConnectionOptions = {
    host,
    port: Number(portText),
    ALPNProtocols: ['h2'],
    ...(servername !== undefined ? { servername } : {}),
    ...(tls.serverRootCACertificate ? { ca: tls.serverRootCACertificate } : {}),
    ...(tls.clientCertPair ? { cert: tls.clientCertPair.crt, key: tls.clientCertPair.key } : {}),
    // the name is checked against the override, as gRPC does
    ...(tls.serverNameOverride !== undefined
      ? {
          checkServerIdentity: (_host: string, cert: Parameters<typeof checkServerIdentity>[1]) =>
            checkServerIdentity(tls.serverNameOverride ?? _host, cert),
        }
      : {}),
  };
  return new Promise((resolve) => {
    let settled = false;
    const done = (why: string | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const socket = connect(options);
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? '';
      done(EXPLAINED[code] ?? `TLS handshake failed: ${err.message}`);
    });
    socket.once('secureConnect', () => {
      // TLS 1.3: a refused client certificate arrives as an alert after the handshake, on the
      // first read; the HTTP/2 preface makes the server read, then answer or refuse
      socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
      socket.once('data', () => done(undefined));
      setTimeout(() => done(undefined), 1_000).unref();
    });
  });
}

function splitAddress(address: string): string[] {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(address);
  if (bracketed) return [bracketed[1] ?? '', bracketed[2] ?? ''];
  const i = address.lastIndexOf(':');
  return i < 0 ? [address] : [address.slice(0, i), address.slice(i + 1)];
}
