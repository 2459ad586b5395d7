import { AppError } from '../../domain/errors.js';

/**
 * A bearer token that is not acceptable: malformed, badly signed, expired, wrong issuer or
 * audience. The reason is logged; the caller only learns invalid_token (RFC 6750), and whether
 * it expired, since clients act on that by fetching a new token.
 */
export class InvalidToken extends AppError {
  constructor(
    readonly reason: string,
    readonly expired = false,
  ) {
    super('invalid_token', expired ? 'the access token expired' : 'the access token is invalid');
    this.name = 'InvalidToken';
  }
}
