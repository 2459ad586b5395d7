export const PERMISSION = { read: 'read:webhooks', replay: 'replay:webhooks' } as const;

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
    const binary = atob(
      part
        .replace(/-/g, '+')
        .replace(/_/g, '/')
        .padEnd(Math.ceil(part.length / 4) * 4, '='),
    );
    // the claims are UTF-8 JSON; atob gives one character per byte
    const json = new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    const claims = JSON.parse(json) as { sub?: unknown; permissions?: unknown; scope?: unknown };
    const permissions = new Set<string>();
    if (Array.isArray(claims.permissions)) for (const p of claims.permissions) if (typeof p === 'string') permissions.add(p);
    if (typeof claims.scope === 'string') for (const p of claims.scope.split(' ')) if (p) permissions.add(p);
    return { subject: typeof claims.sub === 'string' ? claims.sub : 'signed in', permissions };
  } catch {
    return { subject: 'signed in', permissions: new Set() };
  }
}
