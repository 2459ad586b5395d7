import type { BrokerFailure } from '../broker-outcome.js';

interface NatsErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  status?: unknown;
  cause?: unknown;
}

function* causes(err: unknown): Generator<NatsErrorLike> {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 6; depth++) {
    yield e as NatsErrorLike;
    e = (e as NatsErrorLike).cause;
  }
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * A failed JetStream publish, classified: refused authentication or permission final; no stream
 * taking the subject ("no responders") final; over max_payload or the stream's max_msg_size
 * final; a timeout, a closed or refused connection, JetStream unavailable (503) retried, and so is
 * anything else.
 */
export function classifyNatsError(err: unknown): BrokerFailure {
  const chain = [...causes(err)];
  const detail =
    chain
      .map((e) => text(e.message))
      .filter((m, i, all) => m !== '' && all.indexOf(m) === i)
      .join(': ') || String(err);
  const names = chain.map((e) => text(e.name));
  const has = (re: RegExp) => chain.some((e) => re.test(text(e.name)) || re.test(text(e.message)));
  if (
    names.some((n) => /^(AuthorizationError|PermissionViolationError|UserAuthenticationExpiredError)$/.test(n)) ||
    has(/authorization violation|permissions violation/i)
  )
    return { code: 'broker_auth_refused', detail };
  if (has(/max_payload|message size exceeds|maximum payload/i) || chain.some((e) => e.code === 10054))
    return { code: 'broker_message_too_large', detail };
  if (names.includes('NoResponders') || names.includes('NoRespondersError') || has(/no responders/i))
    return { code: 'broker_unknown_destination', detail: `no JetStream stream takes the subject (${detail})` };
  if (chain.some((e) => e.status === 429)) return { code: 'broker_throttled', detail };
  if (
    names.some((n) => /Timeout|Connection|Closed|Draining/.test(n)) ||
    chain.some((e) => e.status === 503) ||
    has(/ECONNREFUSED|ECONNRESET|timeout/i)
  )
    return { code: 'broker_unavailable', detail };
  return { code: 'broker_error', detail };
}
