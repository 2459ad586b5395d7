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

/** gRPC status codes of a refused credential: PERMISSION_DENIED (what Temporal's authorizer answers), UNAUTHENTICATED. */
const REFUSED_CODES = new Set([7, 16]);

/** Whether an error (the client's ServiceError, the worker core's error) is the server refusing the caller's credentials. */
export function isAuthorizationRefusal(err: unknown): boolean {
  // the client wraps it: "Failed to connect to Temporal server", the refusal as its cause
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number' && REFUSED_CODES.has(code)) return true;
    const message = e instanceof Error ? e.message : String(e);
    if (/PERMISSION_DENIED|permission ?denied|UNAUTHENTICATED|Request unauthorized/i.test(message)) return true;
  }
  return false;
}

/** The API key as configured: which setting gave it, and its value now (never put in a message). */
export interface ConfiguredApiKey {
  setting: 'TEMPORAL_API_KEY' | 'TEMPORAL_API_KEY_FILE';
  key: string | undefined;
}

/**
 * Why a server with authorization on (Temporal Cloud, or a self-hosted one with a JWT claim mapper)
 * refused the connection, in words that name the setting (pure). Temporal answers every refusal
 * alike ("Request unauthorized."), on purpose; what can be told apart here is: no key at all, a
 * key (a JWT, as Temporal Cloud's and the default claim mapper's are) whose `exp` has passed, and
 * the rest (signed by a key the server does not trust, or no permission on the namespace).
 */
export function diagnoseTemporalAuth(apiKey: ConfiguredApiKey | undefined, namespace: string | undefined, now = Date.now()): string {
  if (apiKey === undefined) {
    return 'the server refuses calls without an API key: set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE (Temporal Cloud, or a server with authorization on)';
  }
  const expiresAt = jwtExpiry(apiKey.key);
  if (expiresAt !== undefined && expiresAt <= now) {
    return `the API key (${apiKey.setting}) expired at ${new Date(expiresAt).toISOString()}: set a current one`;
  }
  const where = namespace === undefined ? '' : ` or does not grant access to namespace "${namespace}" (TEMPORAL_NAMESPACE)`;
  return `the server refuses the API key (${apiKey.setting}): it is not signed by a key the server trusts${where}`;
}

/** A JWT's `exp` in ms, or undefined when the key is not a JWT or has none (pure; nothing is verified here). */
function jwtExpiry(key: string | undefined): number | undefined {
  const payload = key?.split('.');
  if (payload?.length !== 3 || payload[1] === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload[1], 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
