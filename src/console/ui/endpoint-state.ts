import type { Endpoint } from '../api/types.js';

/** The endpoints page's state badge: its words and, when they are not the API's state, why. */
export interface EndpointBadge {
  label: string;
  title?: string;
}

/**
 * What an endpoint's state badge says. The API's state (ACTIVE / DISABLED) is about auto-disable
 * only: an ACTIVE endpoint that its source no longer allows, or whose OAuth2 token endpoint refuses
 * its client credentials or is unavailable, sends nothing, and a green ACTIVE above the warning
 * read as "fine" at a glance. Revoked wins over the rest (nothing is ever sent, not even after an
 * enable); a disabled endpoint says DISABLED whatever its token; a token it can not get makes
 * ACTIVE read WAITING. Pure.
 */
export function endpointBadge(e: Pick<Endpoint, 'state' | 'deniedReason' | 'auth'>): EndpointBadge {
  if (e.deniedReason !== null) {
    return { label: 'NOT ALLOWED', title: 'Its source no longer allows it: its deliveries end without a request' };
  }
  if (e.state === 'ACTIVE' && e.auth.oauth2?.tokenUnavailable) {
    return { label: 'WAITING', title: 'ACTIVE, but its token endpoint is unavailable: its deliveries wait' };
  }
  if (e.state === 'ACTIVE' && e.auth.oauth2?.tokenRefusal) {
    return { label: 'WAITING', title: 'ACTIVE, but its token endpoint refuses the client credentials: its deliveries wait' };
  }
  return { label: e.state };
}

/**
 * What a PENDING delivery waits on: its endpoint's token endpoint refuses the client credentials,
 * or is unavailable (`host`: the token endpoint's host, from its URL as the API shows it).
 */
export type TokenWait =
  { kind: 'refused'; since: string; message: string } | { kind: 'unavailable'; since: string; message: string; host: string };

/** The host of a token URL (the API masks its user info; the host has none), or the URL itself when it does not parse. Pure. */
export function tokenHost(tokenUrl: string): string {
  try {
    return new URL(tokenUrl).host;
  } catch {
    return tokenUrl;
  }
}

/**
 * Why a PENDING delivery does not move when its endpoint shows WAITING: the worker holds it until a
 * token is granted, and the delivery's own fields (no attempt, no error) said nothing of it. With
 * both recorded, the token endpoint is unavailable now (the worker clears that on a refusal, so it
 * came after). Null for any other delivery, or when the endpoint is not known yet. Pure.
 */
export function tokenWait(d: { status: string }, e: Pick<Endpoint, 'state' | 'deniedReason' | 'auth'> | undefined): TokenWait | null {
  if (d.status !== 'PENDING' || e === undefined || endpointBadge(e).label !== 'WAITING') return null;
  const o = e.auth.oauth2;
  if (o?.tokenUnavailable) return { kind: 'unavailable', ...o.tokenUnavailable, host: tokenHost(o.tokenUrl) };
  if (o?.tokenRefusal) return { kind: 'refused', ...o.tokenRefusal };
  return null;
}
