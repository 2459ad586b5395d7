import type { BrokerFailure } from '../broker-outcome.js';

/** amqplib's errors: a channel or connection closed by the server carries the AMQP reply code. */
interface AmqpErrorLike {
  message?: unknown;
  code?: unknown;
}

/**
 * A failed publish, classified by the AMQP reply code the server closed with (or the socket's
 * error): 403 ACCESS_REFUSED final (wrong credentials, or no permission on the vhost or
 * exchange), 404 NOT_FOUND final (no such exchange), 406 PRECONDITION_FAILED with "message size"
 * final (over max_message_size); a refused or reset connection, a forced close (the broker
 * stopping), 320/501/504/541 retried, and so is anything else.
 */
export function classifyAmqpError(err: unknown): BrokerFailure {
  const e = (typeof err === 'object' && err !== null ? err : {}) as AmqpErrorLike;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const code = e.code;
  if (err instanceof Error && err.name === 'BlockedAddressError') return { code: 'address_blocked', detail: message };
  if (code === 403 || /ACCESS[-_]REFUSED/.test(message)) return { code: 'broker_auth_refused', detail: message };
  if (code === 404 || /NOT[-_]FOUND/.test(message)) return { code: 'broker_unknown_destination', detail: message };
  if ((code === 406 || /PRECONDITION[-_]FAILED/.test(message)) && /message size/i.test(message))
    return { code: 'broker_message_too_large', detail: message };
  if (typeof code === 'string' || code === 320 || /connect|Connection closed|socket|ECONN|EPIPE|ETIMEDOUT/i.test(message))
    return { code: 'broker_unavailable', detail: message };
  return { code: 'broker_error', detail: message };
}
