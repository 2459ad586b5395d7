// The signed-in session: the access token and when it expires, in sessionStorage (this tab only,
// gone with it; never localStorage, never a URL). The token is sent only as Authorization: Bearer.

const KEY = 'webhook-fanout.session';

export interface Session {
  accessToken: string;
  /** epoch milliseconds */
  expiresAt: number;
}

export const PERMISSION = { read: 'read:webhooks', replay: 'replay:webhooks' } as const;

export function saveSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

/** The stored session while it is valid; an expired one is removed. */
export function currentSession(now = Date.now()): Session | null {
  const raw = sessionStorage.getItem(KEY);
  if (!raw) return null;
  try {
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.accessToken === 'string' && typeof s.expiresAt === 'number' && s.expiresAt > now) {
      return { accessToken: s.accessToken, expiresAt: s.expiresAt };
    }
  } catch {
    // unreadable: treated as signed out
  }
  clearSession();
  return null;
}

export interface TokenClaims {
  subject: string;
  permissions: ReadonlySet<string>;
}

/**
 * What the console shows or hides (replay and enable controls) reads the token's permissions;
 * nothing here is trusted: the API checks the signature and the permission of every call.
 */
export function claimsOf(token: string): TokenClaims {
  try {
    const part = token.split('.')[1] ?? '';
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
    const claims = JSON.parse(json) as { sub?: unknown; permissions?: unknown; scope?: unknown };
    const permissions = new Set<string>();
    if (Array.isArray(claims.permissions)) for (const p of claims.permissions) if (typeof p === 'string') permissions.add(p);
    if (typeof claims.scope === 'string') for (const p of claims.scope.split(' ')) if (p) permissions.add(p);
    return { subject: typeof claims.sub === 'string' ? claims.sub : 'signed in', permissions };
  } catch {
    return { subject: 'signed in', permissions: new Set() };
  }
}
