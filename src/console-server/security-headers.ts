/**
 * The headers of every response under /console/: the console renders attacker-controlled text
 * (payloads, headers, endpoint answers), so the browser is told to run nothing but the console's
 * own bundled files, to talk to nothing but this origin and the identity provider, and to never
 * frame the pages or leak their URLs.
 */

export const CSP_REPORT_PATH = '/console/csp-report';

/** The origin of AUTH_URL (scheme, host, port): the one other place the console may talk to. */
export function authOrigin(authUrl: string): string {
  return new URL(authUrl).origin;
}

/**
 * The Content-Security-Policy. No 'unsafe-inline' or 'unsafe-eval' anywhere (styles included: the
 * console's styles are files too), no third-party host. Reports go to report-uri only: once a
 * policy names report-to, Chrome ignores report-uri and queues reports through the Reporting API,
 * which delivers them in batches up to a minute later, so a check for "no violation" right after
 * a page was used would pass on reports not yet sent.
 */
export function contentSecurityPolicy(authUrl: string): string {
  const auth = authOrigin(authUrl);
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${auth}`,
    "object-src 'none'",
    "frame-src 'none'",
    "worker-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    `form-action 'self' ${auth}`,
    `report-uri ${CSP_REPORT_PATH}`,
  ].join('; ');
}

export function consoleSecurityHeaders(authUrl: string): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy(authUrl),
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // no other window keeps a handle on the console (the login is a redirect, not a popup)
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

// Vite names what it bundles assets/<name>-<hash>.<ext>, the hash 8 base64url characters
const HASHED_ASSET = /^assets\/(?:[^/]+\/)*[^/]+-[A-Za-z0-9_-]{8,}\.[A-Za-z0-9]+$/;

export const IMMUTABLE = 'public, max-age=31536000, immutable';
export const REVALIDATE = 'no-cache';

/**
 * Cache-Control of a file of the console, by its path relative to the console's folder: a hashed
 * asset never changes under its name, so it is cached for a year; anything else (index.html, a
 * favicon) is revalidated on every use, so a new release shows at once.
 */
export function cacheControlFor(relativePath: string): string {
  return HASHED_ASSET.test(relativePath) ? IMMUTABLE : REVALIDATE;
}

/**
 * Whether a path under /console/ is a page of the single-page app (served index.html when no
 * file has that name) rather than a missing file: its last segment has no extension. So
 * /console/events/3f0c... is the events page, /console/assets/gone-abc.js a 404.
 */
export function isAppRoute(pathUnderConsole: string): boolean {
  const last = pathUnderConsole.split('/').pop() ?? '';
  return !last.includes('.');
}
