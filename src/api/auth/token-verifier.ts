import { createVerifier, TOKEN_ERROR_CODES } from 'fast-jwt';
import { isAppError } from '../../domain/errors.js';
import { InvalidToken } from './invalid-token.js';
import { ALLOWED_ALGORITHMS, type KeyResolver } from './key-resolver.js';
import type { TenantScope } from '../../db/tenant-scope.js';
import { DEFAULT_NAMESPACES_CLAIM, VARIABLES } from '../../config/settings.js';
import { scopeOfClaims } from './namespaces-claim.js';
import { permissionsOf } from './permissions.js';

export interface TokenVerifierOptions {
  keys: KeyResolver;
  /** exact `iss`; Auth0's is `https://{domain}/` */
  issuer: string;
  audience: string;
  /** tolerance on exp and nbf for clocks that disagree a little (default 30 s) */
  clockToleranceMs?: number;
  /** the claim listing a tenant's namespaces (AUTH_NAMESPACES_CLAIM; default https://webhookfanout.io/namespaces) */
  namespacesClaim?: string;
}

export interface VerifiedToken {
  subject: string;
  permissions: Set<string>;
  /** what the caller may see: null, everything (no namespaces claim); else its namespaces' rows */
  scope: TenantScope;
}

export type VerifyToken = (token: string) => Promise<VerifiedToken>;

// a JWT is three base64url segments; anything longer than this is not one of ours
const MAX_TOKEN_LENGTH = 8192;

/** fast-jwt's verdict as InvalidToken; a key set we could not reach stays a transient error. */
function classify(err: unknown): Error {
  if (isAppError(err)) return err;
  const { code, originalError } = err as { code?: unknown; originalError?: unknown };
  // the key resolver's own verdicts travel wrapped in fast-jwt's key-fetching error
  if (isAppError(originalError)) return originalError;
  if (code === TOKEN_ERROR_CODES.expired) return new InvalidToken(String((err as Error).message), true);
  if (typeof code === 'string' && code.startsWith('FAST_JWT_')) return new InvalidToken(`${code}: ${String((err as Error).message)}`);
  return new InvalidToken(err instanceof Error ? err.message : String(err));
}

/**
 * Verifies an access token: RS256/ES256 signature by a key of the identity provider's key set,
 * exact issuer and audience, exp required and enforced, nbf when present.
 */
export function createTokenVerifier(opts: TokenVerifierOptions): VerifyToken {
  const verify = createVerifier({
    algorithms: [...ALLOWED_ALGORITHMS],
    key: async (decoded: { header: Record<string, unknown> }) => opts.keys.publicKey(decoded.header),
    allowedIss: opts.issuer,
    allowedAud: opts.audience,
    requiredClaims: ['exp', 'iss', 'aud'],
    clockTolerance: opts.clockToleranceMs ?? VARIABLES.AUTH_CLOCK_TOLERANCE_SECONDS.default * 1000,
    // repeated calls with the same token skip the signature check, until at most its exp
    cache: 1000,
    cacheTTL: 60_000,
  });

  const namespacesClaim = opts.namespacesClaim ?? DEFAULT_NAMESPACES_CLAIM;

  return async function verifyToken(token) {
    if (token.length > MAX_TOKEN_LENGTH) throw new InvalidToken('token too long');
    let claims: unknown;
    try {
      claims = await verify(token);
    } catch (err) {
      throw classify(err);
    }
    if (typeof claims !== 'object' || claims === null) throw new InvalidToken('the token has no claims object');
    const c = claims as Record<string, unknown>;
    const scope = scopeOfClaims(c, namespacesClaim);
    if (typeof scope === 'string') throw new InvalidToken(scope);
    return {
      subject: typeof c.sub === 'string' ? c.sub : '',
      permissions: permissionsOf(c),
      scope,
    };
  };
}
