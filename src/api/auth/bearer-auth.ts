import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuthRefused, type Challenge } from '../../http/challenge.js';
import type { Logger } from '../../observability/logger.js';
import { InvalidToken } from './invalid-token.js';
import type { Permission } from './permissions.js';
import type { VerifiedToken, VerifyToken } from './token-verifier.js';

export const REALM = 'webhooks';

declare module 'fastify' {
  interface FastifyRequest {
    /** the verified caller of an admin API route */
    principal: VerifiedToken | null;
  }
}

export type AuthHook = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;

const bearerChallenge = (params: Record<string, string> = {}): Challenge => ({ scheme: 'Bearer', params: { realm: REALM, ...params } });

// RFC 6750 §2.1: "Bearer" then one b64token
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * RFC 6750 answers for the admin API: no bearer token -> 401 with the bare challenge; a bad one
 * -> 401 invalid_token; a good one without the permission -> 403 insufficient_scope. Only the
 * Authorization header is read (no token in query strings or bodies, where they end up in logs).
 * The refusals are thrown: the one error handler (http/problem.ts) answers them with the challenge.
 */
export function createBearerAuth(deps: { verifyToken: VerifyToken; logger: Logger }) {
  return function require(permission: Permission): AuthHook {
    return async function authenticate(req) {
      const header = req.headers.authorization;
      if (header === undefined || !/^bearer(\s|$)/i.test(header)) {
        throw new AuthRefused('unauthorized', 'a bearer token is required', bearerChallenge());
      }
      let principal: VerifiedToken;
      try {
        const token = BEARER.exec(header)?.[1];
        if (token === undefined) throw new InvalidToken('malformed Authorization header');
        principal = await deps.verifyToken(token);
      } catch (err) {
        // transient errors (key set unreachable) pass as they are: 503, not a 401 that would make
        // a client discard a good token
        if (!(err instanceof InvalidToken)) throw err;
        deps.logger.info({ reqId: req.id, reason: err.reason }, 'bearer token rejected');
        throw new AuthRefused('invalid_token', err.message, bearerChallenge({ error: 'invalid_token', error_description: err.message }));
      }
      if (!principal.permissions.has(permission)) {
        deps.logger.info({ reqId: req.id, sub: principal.subject, permission }, 'permission missing');
        throw new AuthRefused(
          'insufficient_scope',
          `the token lacks the ${permission} permission`,
          bearerChallenge({ error: 'insufficient_scope', scope: permission }),
        );
      }
      req.principal = principal;
    };
  };
}

export type BearerAuth = ReturnType<typeof createBearerAuth>;
