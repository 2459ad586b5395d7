import type { BrokerFailure } from '../broker-outcome.js';

/** What the client's errors carry (@platformatic/kafka's GenericError, MultipleErrors, ProtocolError) */
interface KafkaErrorLike {
  message?: unknown;
  code?: unknown;
  apiId?: unknown;
  serverErrorMessage?: unknown;
  canRetry?: unknown;
  hasStaleMetadata?: unknown;
  errors?: unknown;
  cause?: unknown;
}

const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);
const UNKNOWN = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_TOPIC_EXCEPTION']);
const REFUSED = new Set([
  'TOPIC_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'SASL_AUTHENTICATION_FAILED',
  'UNSUPPORTED_SASL_MECHANISM',
  'ILLEGAL_SASL_STATE',
]);
/** A Metadata answer's partition without a leader: an election in progress, nothing sent yet */
const LEADERLESS = new Set(['LEADER_NOT_AVAILABLE']);
/**
 * A Produce answer from a broker no longer the leader. Not "nothing written": with acks=all the
 * leader appends first and waits for its followers; losing leadership meanwhile answers so, and the
 * follower elected may hold the record (Kafka's Partition.checkEnoughReplicasReachOffset). Our
 * producer is not idempotent, so sending it again could publish it twice: the delivery's backoff's.
 */
const MAYBE_WRITTEN = new Set(['NOT_LEADER_OR_FOLLOWER', 'FENCED_LEADER_EPOCH']);
const THROTTLED = new Set(['THROTTLING_QUOTA_EXCEEDED', 'POLICY_VIOLATION']);
/**
 * A record the broker will never take as it is (not CORRUPT_MESSAGE: Kafka calls a bad checksum
 * retriable, the bytes may have been damaged on the way).
 */
const INVALID = new Set(['INVALID_RECORD', 'INVALID_TIMESTAMP']);
/** Kafka 4 answers a record without a key on a compacted topic with UNKNOWN_SERVER_ERROR and these words (its LogValidator's) */
const INVALID_WORDS = /compacted topic cannot accept message without key/i;

/** Every error of the client's tree (an aggregate's errors, causes), the outermost first. */
function* errorTree(err: unknown, depth = 0): Generator<KafkaErrorLike> {
  if (depth > 6 || typeof err !== 'object' || err === null) return;
  const e = err as KafkaErrorLike;
  yield e;
  if (Array.isArray(e.errors)) for (const inner of e.errors) yield* errorTree(inner, depth + 1);
  yield* errorTree(e.cause, depth + 1);
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Whether the error holds a connect refused (ECONNREFUSED): no connection was made, so nothing was sent on it. */
export function connectRefused(err: unknown): boolean {
  return [...errorTree(err)].some((e) => e.code === 'ECONNREFUSED');
}

/**
 * Whether a failed produce (or metadata read) met a partition without a leader before anything
 * was sent, and nothing else: a Metadata answer's LEADER_NOT_AVAILABLE, or the client finding no
 * broker for the partition's leader in its metadata (its "not available in the current cluster
 * metadata"); with `refusedToo`, also a connect refused (a leader named while its listener is not
 * up yet: only once the attempt waits for a leader, not to wait on a cluster that is down). The
 * record was then not sent, so sending it once there is a leader writes it once. Not when the error
 * also holds a Produce answer (NOT_LEADER_OR_FOLLOWER: it may have been written), a network
 * failure or a timeout (a request cut in flight may have been written).
 */
export function leaderMissing(err: unknown, refusedToo = false): boolean {
  const all = [...errorTree(err)];
  const stale = (e: KafkaErrorLike) => e.code === 'PLT_KFK_NETWORK' && e.hasStaleMetadata === true;
  const refused = (e: KafkaErrorLike) => refusedToo && e.code === 'PLT_KFK_NETWORK' && connectRefused(e.cause);
  const leaderless = all.some((e) => LEADERLESS.has(text(e.apiId)) || stale(e) || refused(e));
  const sent = all.some(
    (e) => MAYBE_WRITTEN.has(text(e.apiId)) || (e.code === 'PLT_KFK_NETWORK' && !stale(e) && !refused(e)) || e.code === 'PLT_KFK_TIMEOUT',
  );
  return leaderless && !sent;
}

/**
 * A failed produce, classified (docs/destinations.md, "The error classification rule"): a record
 * over message.max.bytes or one the broker finds invalid (no key on a compacted topic, a timestamp
 * out of the topic's bounds), an unknown topic, refused authentication or authorization are final;
 * throttling is retried; a broker or leader not there (network, timeouts, the retriable protocol
 * errors) is retried, and so is anything else (when in doubt, retryable).
 */
export function classifyKafkaError(err: unknown): BrokerFailure {
  const all = [...errorTree(err)];
  const protocol = all.filter((e) => typeof e.apiId === 'string');
  const named = (set: Set<string>) => protocol.find((e) => set.has(text(e.apiId)));
  const say = (e: KafkaErrorLike) => [text(e.apiId), text(e.serverErrorMessage) || text(e.message)].filter((s) => s !== '').join(': ');

  const tooLarge = named(TOO_LARGE);
  if (tooLarge) return { code: 'broker_message_too_large', detail: say(tooLarge) };
  const invalid = named(INVALID) ?? protocol.find((e) => INVALID_WORDS.test(text(e.serverErrorMessage)));
  if (invalid) return { code: 'broker_record_invalid', detail: say(invalid) };
  const refused = named(REFUSED) ?? all.find((e) => e.code === 'PLT_KFK_AUTHENTICATION');
  if (refused) return { code: 'broker_auth_refused', detail: say(refused) };
  // the client answers an unknown topic from the metadata, before any produce
  const unknown = named(UNKNOWN) ?? all.find((e) => e.code === 'PLT_KFK_USER' && /unknown topic/i.test(text(e.message)));
  if (unknown) return { code: 'broker_unknown_destination', detail: say(unknown) };
  const throttled = named(THROTTLED);
  if (throttled) return { code: 'broker_throttled', detail: say(throttled) };
  const network = all.find((e) => e.code === 'PLT_KFK_NETWORK' || e.code === 'PLT_KFK_TIMEOUT');
  if (network) {
    const cause = all.find((e) => e !== network && typeof e.code === 'string' && !text(e.code).startsWith('PLT_KFK_'));
    return { code: 'broker_unavailable', detail: [text(network.message), cause ? text(cause.message) : ''].filter(Boolean).join(': ') };
  }
  // the protocol's other errors: a leader moving, replicas missing (retriable), or one we do not name
  const first = protocol[0];
  if (first) return { code: first.canRetry === true ? 'broker_unavailable' : 'broker_error', detail: say(first) };
  const innermost = all[all.length - 1] ?? {};
  return { code: 'broker_error', detail: text(innermost.message) || 'the producer failed without a message' };
}
