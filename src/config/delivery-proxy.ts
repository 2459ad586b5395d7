import { readFileSync } from 'node:fs';
import type { EnvReader } from './env-reader.js';
import { redactUrl } from './env-reader.js';
import { noProxyProblems } from './no-proxy.js';
import { readable } from './tls.js';

/**
 * The forward proxy HTTP deliveries go through (DELIVERY_PROXY_*; docs/deploy.md, "A static
 * egress address"). Its credentials are files (a mounted Secret) read again while the worker runs,
 * never a URL's userinfo: a URL is logged and shown, a file is not.
 */
export interface DeliveryProxyConfig {
  /** http(s)://host:port of the proxy, without credentials or path */
  url: string;
  /** DELIVERY_NO_PROXY's entries (config/no-proxy.ts) */
  noProxy: string[];
  /** the files of the proxy's Basic credentials; absent: none sent */
  credentials: { usernameFile: string; passwordFile: string } | undefined;
}

/** DELIVERY_PROXY_*: null when no proxy is set (every delivery goes direct); each problem named. */
export function readDeliveryProxy(r: EnvReader): DeliveryProxyConfig | null {
  const raw = r.optional('DELIVERY_PROXY_URL');
  const noProxy = r.list('DELIVERY_NO_PROXY');
  for (const problem of noProxyProblems(noProxy)) r.problems.push(`DELIVERY_NO_PROXY: ${problem}`);
  const usernameFile = readable(r, 'DELIVERY_PROXY_USERNAME_FILE');
  const passwordFile = readable(r, 'DELIVERY_PROXY_PASSWORD_FILE');
  if ((usernameFile === undefined) !== (passwordFile === undefined))
    r.problems.push('DELIVERY_PROXY_USERNAME_FILE and DELIVERY_PROXY_PASSWORD_FILE go together: set both or neither');
  const credentials = usernameFile !== undefined && passwordFile !== undefined ? { usernameFile, passwordFile } : undefined;
  if (raw === undefined) {
    if (credentials) r.problems.push('DELIVERY_PROXY_USERNAME_FILE and DELIVERY_PROXY_PASSWORD_FILE are set but DELIVERY_PROXY_URL is not');
    return null;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    r.problems.push(`DELIVERY_PROXY_URL must be a URL, got "${redactUrl(raw, false)}"`);
    return null;
  }
  if (url.username !== '' || url.password !== '') {
    r.problems.push(
      'DELIVERY_PROXY_URL must not carry credentials: put them in the files of DELIVERY_PROXY_USERNAME_FILE and DELIVERY_PROXY_PASSWORD_FILE',
    );
  } else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    r.problems.push(`DELIVERY_PROXY_URL must be an http:// or https:// URL, got "${raw}"`);
  } else if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    r.problems.push(`DELIVERY_PROXY_URL must be the proxy's scheme, host and port only, got "${raw}"`);
  }
  return { url: url.origin, noProxy, credentials };
}

/** How often the credential files are read again: a rotated Secret reaches the pod within about a minute anyway. */
export const PROXY_CREDENTIALS_REFRESH_MS = 10_000;

/**
 * The Proxy-Authorization value for each new proxy connection: Basic of the two files (trimmed: a
 * Secret written with a newline), read again at most every PROXY_CREDENTIALS_REFRESH_MS, so
 * rotated credentials are used without a restart. null: no credentials configured.
 */
export function proxyAuthorizationSource(
  credentials: DeliveryProxyConfig['credentials'],
  now: () => number = Date.now,
): () => string | null {
  if (credentials === undefined) return () => null;
  const read = () => {
    const username = readFileSync(credentials.usernameFile, 'utf8').trim();
    const password = readFileSync(credentials.passwordFile, 'utf8').trim();
    return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  };
  let value = read();
  let readAt = now();
  return () => {
    if (now() - readAt >= PROXY_CREDENTIALS_REFRESH_MS) {
      readAt = now();
      try {
        value = read();
      } catch {
        // a Secret being rewritten (kubelet swaps a symlink): keep the last value, try again later
      }
    }
    return value;
  };
}
