import type { TenantScope } from '../../db/tenant-scope.js';

// a Kubernetes namespace name (RFC 1123 label)
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
// a token is at most 8 KiB (token-verifier.ts): more names than this are not a tenant's list
const MAX_NAMESPACES = 256;

/**
 * The scope a verified token's claims give (db/tenant-scope.ts): without the claim, everything,
 * as before tenancy; with it, the namespaces it lists (an empty list sees nothing). A claim that
 * is not a list of namespace names is a string naming the problem (the token is refused as
 * invalid rather than read as "everything" or guessed at).
 */
export function scopeOfClaims(claims: Record<string, unknown>, claim: string): TenantScope | string {
  if (!Object.hasOwn(claims, claim)) return null;
  const value = claims[claim];
  if (!Array.isArray(value)) return `the ${claim} claim must be an array of namespace names`;
  if (value.length > MAX_NAMESPACES) return `the ${claim} claim lists more than ${MAX_NAMESPACES} namespaces`;
  const namespaces = new Set<string>();
  for (const v of value) {
    if (typeof v !== 'string' || !NAMESPACE.test(v)) {
      return `the ${claim} claim holds ${typeof v === 'string' ? `"${v.slice(0, 64)}", which is not a namespace name` : `a ${v === null ? 'null' : typeof v}`}`;
    }
    namespaces.add(v);
  }
  return { namespaces: [...namespaces].sort() };
}
