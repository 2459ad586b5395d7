import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { EnvReader, VariableName } from './env-reader.js';
import { DATABASE_SSL_MODES, type DatabaseSslMode } from './settings.js';

export interface DatabaseTls {
  mode: DatabaseSslMode;
  /** PEM bundle of the CA(s) the server's certificate must chain to; absent: Node's public roots */
  caFile: string | undefined;
  /** a client certificate and its key (Cloud SQL with client certificates required) */
  certFile: string | undefined;
  keyFile: string | undefined;
}

/** TLS and authentication of the Temporal connection (docs/deploy.md, "Temporal Cloud", "Self-hosted Temporal with mTLS"). */
export interface TemporalTls {
  /** PEM of the CA that signed the frontend's certificate; absent: Node's public roots (Temporal Cloud) */
  caFile: string | undefined;
  /** client certificate and key (mTLS) */
  certFile: string | undefined;
  keyFile: string | undefined;
  /** the name the server's certificate must carry when it is not the address's host */
  serverName: string | undefined;
  /** Temporal Cloud API key: the value, or a file re-read when it changes (a rotated Secret) */
  apiKey: { value: string } | { file: string } | undefined;
}

/** The ssl settings of a connection string (pg-connection-string reads them); set in one place only. */
const URL_TLS_PARAMS = ['ssl', 'sslmode', 'sslrootcert', 'sslcert', 'sslkey'];

/** A file variable's path, its problem named when it is not a readable file. */
export function readable(r: EnvReader, name: VariableName): string | undefined {
  const file = r.optional(name);
  if (file === undefined) return undefined;
  try {
    accessSync(file, constants.R_OK);
    if (!statSync(file).isFile()) r.problems.push(`${name}: ${file} is not a file`);
  } catch (err) {
    r.problems.push(`${name}: can not read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return file;
}

function pairOf(
  r: EnvReader,
  certName: VariableName,
  keyName: VariableName,
): { certFile: string | undefined; keyFile: string | undefined } {
  const certFile = readable(r, certName);
  const keyFile = readable(r, keyName);
  if ((certFile === undefined) !== (keyFile === undefined)) r.problems.push(`${certName} and ${keyName} go together: set both or neither`);
  return { certFile, keyFile };
}

/**
 * DATABASE_SSL_MODE, DATABASE_CA_FILE, DATABASE_CLIENT_CERT_FILE, DATABASE_CLIENT_KEY_FILE. A CA
 * file alone means verify-full. null when none is set: DATABASE_URL's own sslmode applies.
 */
export function readDatabaseTls(r: EnvReader, databaseUrl: string): DatabaseTls | null {
  const rawMode = r.optional('DATABASE_SSL_MODE');
  const caFile = readable(r, 'DATABASE_CA_FILE');
  const { certFile, keyFile } = pairOf(r, 'DATABASE_CLIENT_CERT_FILE', 'DATABASE_CLIENT_KEY_FILE');
  if (rawMode === undefined && caFile === undefined && certFile === undefined) return null;
  let mode: DatabaseSslMode = 'verify-full';
  if (rawMode !== undefined) {
    if ((DATABASE_SSL_MODES as readonly string[]).includes(rawMode)) mode = rawMode as DatabaseSslMode;
    else r.problems.push(`DATABASE_SSL_MODE must be one of ${DATABASE_SSL_MODES.join(', ')}, got "${rawMode}"`);
  }
  if (mode === 'disable' && (caFile !== undefined || certFile !== undefined)) {
    r.problems.push('DATABASE_SSL_MODE=disable contradicts DATABASE_CA_FILE / DATABASE_CLIENT_CERT_FILE');
  }
  if (mode === 'require' && caFile !== undefined) {
    r.problems.push('DATABASE_SSL_MODE=require does not check the server: with DATABASE_CA_FILE use verify-ca or verify-full');
  }
  const inUrl = urlTlsParams(databaseUrl);
  if (inUrl.length > 0) {
    r.problems.push(`DATABASE_URL sets ${inUrl.join(', ')} and DATABASE_SSL_MODE / DATABASE_CA_FILE are set too: say TLS in one place`);
  }
  return { mode, caFile, certFile, keyFile };
}

function urlTlsParams(url: string): string[] {
  try {
    const params = new URL(url).searchParams;
    return URL_TLS_PARAMS.filter((p) => params.has(p));
  } catch {
    return []; // DATABASE_URL's own problem is reported already
  }
}

/**
 * TEMPORAL_TLS, TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY, TEMPORAL_TLS_SERVER_NAME,
 * TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE: the Temporal CLI's names for the same settings. TLS is
 * on when any of them is set (an API key never travels in plaintext); TEMPORAL_TLS=true alone is
 * TLS with the public roots. null: plaintext.
 */
export function readTemporalTls(r: EnvReader): TemporalTls | null {
  const caFile = readable(r, 'TEMPORAL_TLS_CA');
  const { certFile, keyFile } = pairOf(r, 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY');
  const serverName = r.optional('TEMPORAL_TLS_SERVER_NAME');
  const keyValue = r.optional('TEMPORAL_API_KEY');
  const keyFilePath = readable(r, 'TEMPORAL_API_KEY_FILE');
  if (keyValue !== undefined && keyFilePath !== undefined) r.problems.push('set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both');
  const apiKey = keyValue !== undefined ? { value: keyValue } : keyFilePath !== undefined ? { file: keyFilePath } : undefined;
  const anySetting = caFile !== undefined || certFile !== undefined || serverName !== undefined || apiKey !== undefined;
  const enabled = r.bool('TEMPORAL_TLS', anySetting);
  if (!enabled) {
    if (anySetting) {
      r.problems.push(
        'TEMPORAL_TLS=false contradicts TEMPORAL_TLS_CA / TEMPORAL_TLS_CERT / TEMPORAL_TLS_SERVER_NAME / TEMPORAL_API_KEY (an API key is never sent in plaintext)',
      );
    }
    return null;
  }
  return { caFile, certFile, keyFile, serverName, apiKey };
}

/** What a Temporal connection (the client's Connection or the worker's NativeConnection) is given. */
export interface TemporalConnectionSettings {
  address: string;
  tls?: { serverNameOverride?: string; serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer } };
  apiKey?: string;
}

/**
 * The connection's options, its files read now: called at every connect (start-up and each retry
 * of it), so a certificate rotated in its Secret is used by the next connection made.
 */
export function temporalConnectionSettings(t: { address: string; tls: TemporalTls | null }): TemporalConnectionSettings {
  if (t.tls === null) return { address: t.address };
  const { caFile, certFile, keyFile, serverName, apiKey } = t.tls;
  return {
    address: t.address,
    tls: {
      ...(serverName !== undefined ? { serverNameOverride: serverName } : {}),
      ...(caFile !== undefined ? { serverRootCACertificate: readFileSync(caFile) } : {}),
      ...(certFile !== undefined && keyFile !== undefined
        ? { clientCertPair: { crt: readFileSync(certFile), key: readFileSync(keyFile) } }
        : {}),
    },
    ...(apiKey !== undefined ? { apiKey: currentApiKey(apiKey) } : {}),
  };
}

/** The API key now: the value, or the file's content (trimmed: a Secret written with a newline). */
export function currentApiKey(apiKey: NonNullable<TemporalTls['apiKey']>): string {
  return 'value' in apiKey ? apiKey.value : readFileSync(apiKey.file, 'utf8').trim();
}

/** How often an API key file is read again: a rotated Secret reaches the pod within about a minute anyway. */
export const API_KEY_REFRESH_MS = 10_000;

/**
 * The API key for each call of a client Connection (its `apiKey` may be a function): a file is
 * read again at most every API_KEY_REFRESH_MS, so a rotated key is used without a reconnect.
 */
export function apiKeySource(apiKey: NonNullable<TemporalTls['apiKey']>, now: () => number = Date.now): () => string {
  if ('value' in apiKey) return () => apiKey.value;
  let key = currentApiKey(apiKey);
  let readAt = now();
  return () => {
    if (now() - readAt >= API_KEY_REFRESH_MS) {
      readAt = now();
      try {
        key = currentApiKey(apiKey);
      } catch {
        // a Secret being rewritten (kubelet swaps a symlink): keep the last key, try again later
      }
    }
    return key;
  };
}

/** pg's `ssl` option for a new connection, its files read now (a rotated CA applies to the next connection). */
export function pgSslOptions(t: DatabaseTls): false | ConnectionOptions {
  if (t.mode === 'disable') return false;
  if (t.mode === 'require') return { rejectUnauthorized: false };
  return {
    rejectUnauthorized: true,
    ...(t.caFile !== undefined ? { ca: readFileSync(t.caFile) } : {}),
    ...(t.certFile !== undefined && t.keyFile !== undefined ? { cert: readFileSync(t.certFile), key: readFileSync(t.keyFile) } : {}),
    // verify-ca: the chain, not the name (libpq's meaning); verify-full: pg checks the host it connects to
    ...(t.mode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
  };
}
