// The signed-in session: the access token and when it expires, in sessionStorage (this tab only,
// gone with it; never localStorage, never a URL). The token is sent only as Authorization: Bearer.

const KEY = 'webhook-fanout.session';

export interface Session {
  accessToken: string;
  /** epoch milliseconds */
  expiresAt: number;
}

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
