import { AppError } from '../domain/errors.js';

/** What a client must present to be let in (RFC 9110 11.6.1): a scheme and its parameters. */
export interface Challenge {
  scheme: 'Basic' | 'Bearer';
  /** written in this order, realm first */
  params: Record<string, string>;
}

/**
 * A request refused for its credentials (401) or their permissions (403): permanent, like any
 * input error, and carrying the challenge that the one error handler (problem.ts) answers with,
 * as WWW-Authenticate, beside the status its code maps to.
 */
export class AuthRefused extends AppError {
  constructor(
    code: 'unauthorized' | 'invalid_token' | 'insufficient_scope',
    message: string,
    readonly challenge: Challenge,
    /** refused before the body was read: closing the connection is cheaper than reading the body to keep it */
    readonly closeConnection = false,
  ) {
    super(code, message);
    this.name = 'AuthRefused';
  }
}

export function renderChallenge(c: Challenge): string {
  return `${c.scheme} ${Object.entries(c.params)
    .map(([name, value]) => `${name}="${value}"`)
    .join(', ')}`;
}

/**
 * Inbound credentials not checked at all: their client address or source was refused too often
 * lately, or too many checks wait already (src/ingest/refusal-limiter.ts). 429 with Retry-After,
 * answered before the body like a wrong password, so the connection is closed.
 */
export class RefusalsLimited extends AppError {
  readonly closeConnection = true;
  constructor(retryAfterSeconds: number) {
    super('too_many_refusals', 'too many refused credentials from this client or for this source lately; retry later', {
      retryAfterSeconds,
    });
    this.name = 'RefusalsLimited';
  }
}
