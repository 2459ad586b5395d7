/** The admin API's permissions (Auth0 style `permissions` claim, or space-separated `scope`). */
export const PERMISSIONS = ['read:webhooks', 'replay:webhooks'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const READ: Permission = 'read:webhooks';
export const REPLAY: Permission = 'replay:webhooks';

/** Every permission a verified token grants, from either claim; anything malformed grants nothing. */
export function permissionsOf(claims: Record<string, unknown>): Set<string> {
  const granted = new Set<string>();
  const { permissions, scope } = claims;
  if (Array.isArray(permissions)) {
    for (const p of permissions) if (typeof p === 'string') granted.add(p);
  }
  if (typeof scope === 'string') {
    for (const s of scope.split(' ')) if (s !== '') granted.add(s);
  }
  return granted;
}
