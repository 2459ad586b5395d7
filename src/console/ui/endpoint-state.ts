import type { Endpoint } from '../api/types.js';

/** The endpoints page's state badge: its words and, when they are not the API's state, why. */
export interface EndpointBadge {
  label: string;
  title?: string;
}

/**
 * What an endpoint's state badge says. The API's state (ACTIVE / DISABLED) is about auto-disable
 * only: an ACTIVE endpoint that its source no longer allows, or whose OAuth2 token endpoint refuses
 * its client credentials, sends nothing, and a green ACTIVE above the warning read as "fine" at a
 * glance. Revoked wins over the rest (nothing is ever sent, not even after an enable); a disabled
 * endpoint says DISABLED whatever its token; a refused token makes ACTIVE read WAITING. Pure.
 */
export function endpointBadge(e: Pick<Endpoint, 'state' | 'deniedReason' | 'auth'>): EndpointBadge {
  if (e.deniedReason !== null) {
    return { label: 'NOT ALLOWED', title: 'Its source no longer allows it: its deliveries end without a request' };
  }
  if (e.state === 'ACTIVE' && e.auth.oauth2?.tokenRefusal) {
    return { label: 'WAITING', title: 'ACTIVE, but its token endpoint refuses the client credentials: its deliveries wait' };
  }
  return { label: e.state };
}

/** The refusal a PENDING delivery waits on: its endpoint's token endpoint refuses the client credentials. */
export interface TokenWait {
  since: string;
  message: string;
}

/**
 * Why a PENDING delivery does not move when its endpoint shows WAITING: the worker holds it until a
 * token is granted, and the delivery's own fields (no attempt, no error) said nothing of it. Null
 * for any other delivery, or when the endpoint is not known yet. Pure.
 */
export function tokenWait(d: { status: string }, e: Pick<Endpoint, 'state' | 'deniedReason' | 'auth'> | undefined): TokenWait | null {
  if (d.status !== 'PENDING' || e === undefined || endpointBadge(e).label !== 'WAITING') return null;
  return e.auth.oauth2?.tokenRefusal ?? null;
}
