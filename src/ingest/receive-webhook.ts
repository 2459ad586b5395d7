import type { EventRepository, InsertedEvent, NewEvent } from '../db/events.js';
import type { InboundCredential } from '../domain/records.js';
import { isAppError, permanent, transient } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { EventPublisher } from '../transport/publisher.js';
import { extractIdentity, MAX_IDENTIFIER_LENGTH } from './extract.js';
import { activeTraceCarrier, inSpan, isSampled, SpanKind, tracingOn } from '../observability/spans.js';
import { handshakeOf, type Handshake } from './handshakes.js';
import { isStructured, readCloudEvent } from './cloudevents.js';

/** A CloudEvent's id and type as the event's external id and type (docs/cloudevents.md). */
function cloudEventIdentity(contentType: string | null, headers: Record<string, string>, json: unknown) {
  const ce = readCloudEvent(contentType, headers, json);
  return { externalEventId: ce.id, eventType: ce.type };
}

export interface InboundRequest {
  /** the source's credential, verified by the HTTP layer before the body was read */
  credential: InboundCredential;
  body: Buffer;
  contentType: string | null;
  /** lower-case names, credentials already removed */
  headers: Record<string, string>;
}

/** An event stored and published (or its duplicate), or a provider's handshake answered and not stored. */
export type ReceiveResult = { eventId: string; duplicate: boolean } | { handshake: Handshake };

const INSERT_ATTRIBUTES = { 'db.system': 'postgresql', 'db.operation.name': 'INSERT', 'db.collection.name': 'webhook_event' };
export const PUBLISH_ATTRIBUTES = {
  'messaging.system': 'aws_sns',
  'messaging.operation.type': 'send',
  'messaging.operation.name': 'PublishBatch',
};

const isJson = (contentType: string | null): boolean =>
  contentType !== null && /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(contentType);

/**
 * The inbound use case, for a verified sender: parse identity, persist (idempotently), publish, answer.
 * 200 means persisted AND published; a failed publish leaves the row unpublished for the
 * sender's retry (a duplicate that re-publishes) or the sweeper.
 */
export function createReceiveWebhook(deps: {
  events: Pick<EventRepository, 'insertOrGetDuplicate' | 'markPublished' | 'clearPublished'>;
  /** defaults to events.insertOrGetDuplicate; ingest passes the batching inserter */
  insertEvent?: (e: NewEvent) => Promise<InsertedEvent>;
  publisher: EventPublisher;
  metrics: Metrics;
  logger: Logger;
}) {
  /** `marked`: the row already says published; otherwise mark it after publishing. */
  const publish = async (eventId: string, marked: boolean): Promise<void> => {
    try {
      await (tracingOn() ? publishInSpan(eventId) : deps.publisher.publish(eventId));
    } catch (err) {
      deps.metrics.publishFailures.inc();
      if (marked) {
        await deps.events.clearPublished(eventId).catch((clearErr: unknown) =>
          // the sweeper's "published but never started" scan still finds it
          deps.logger.warn({ eventId, err: String(clearErr) }, 'could not clear published_at after a failed publish'),
        );
      }
      throw transient('publish_failed', 'the event was stored but could not be queued; retry later', err);
    }
    if (marked) return;
    try {
      await deps.events.markPublished(eventId);
    } catch (err) {
      // published already; the sweeper may publish it again, which the workflow id makes harmless
      deps.logger.warn({ eventId, err: String(err) }, 'could not mark event published');
    }
  };

  const insertEvent = deps.insertEvent ?? ((e: NewEvent) => deps.events.insertOrGetDuplicate(e));

  /** The publish as a producer span; the message carries its context to the consumer (docs/tracing.md). */
  const publishInSpan = (eventId: string): Promise<void> =>
    inSpan('publish event', { kind: SpanKind.PRODUCER, attributes: PUBLISH_ATTRIBUTES }, () =>
      deps.publisher.publish(eventId, activeTraceCarrier()),
    );

  return async function receiveWebhook(req: InboundRequest): Promise<ReceiveResult> {
    const { credential } = req;
    const cloudEvents = credential.format === 'CloudEvents';
    // a binary-mode CloudEvent may carry no data: its attributes are all in the headers
    if (req.body.length === 0 && !(cloudEvents && !isStructured(req.contentType))) {
      throw permanent('empty_body', 'the request body is empty');
    }
    let json: unknown;
    if (req.body.length > 0 && isJson(req.contentType)) {
      try {
        json = JSON.parse(req.body.toString('utf8'));
      } catch {
        throw permanent('invalid_json', 'the body is declared as JSON but is not valid JSON');
      }
    }
    const handshake = handshakeOf(credential.verification?.type, req.headers, json);
    if (handshake) return { handshake };
    const identity = cloudEvents
      ? cloudEventIdentity(req.contentType, req.headers, json)
      : extractIdentity(
          json,
          req.headers,
          { eventId: credential.eventIdRule, eventType: credential.eventTypeRule },
          credential.verification?.type,
        );
    if ((identity.externalEventId?.length ?? 0) > MAX_IDENTIFIER_LENGTH) {
      throw permanent('invalid_event_id', `the event id is longer than ${MAX_IDENTIFIER_LENGTH} characters`);
    }
    if ((identity.eventType?.length ?? 0) > MAX_IDENTIFIER_LENGTH) {
      throw permanent('invalid_event_type', `the event type is longer than ${MAX_IDENTIFIER_LENGTH} characters`);
    }
    // Postgres text can not hold NUL; refuse it here rather than fail the insert
    if (identity.externalEventId?.includes('\0') || identity.eventType?.includes('\0')) {
      throw permanent('invalid_event_id', 'the event id or type contains a NUL character');
    }

    let stored;
    try {
      const event: NewEvent = {
        source: credential.source,
        externalEventId: identity.externalEventId,
        eventType: identity.eventType,
        payload: req.body,
        contentType: req.contentType,
        headers: req.headers,
      };
      if (tracingOn()) {
        // the request's trace, kept with the event when it is sampled: the admin API shows its id
        const trace = activeTraceCarrier();
        if (trace && isSampled(trace.traceparent)) event.traceparent = trace.traceparent;
        stored = await inSpan('insert event', { kind: SpanKind.CLIENT, attributes: INSERT_ATTRIBUTES }, () => insertEvent(event));
      } else {
        stored = await insertEvent(event);
      }
    } catch (err) {
      // an outage is worth a retry by the sender; anything else is ours and answers as it is classified
      if (isAppError(err) && err.kind === 'transient')
        throw transient('database_unavailable', 'the event could not be stored; retry later', err);
      throw err;
    }

    if (stored.duplicate) {
      // 200 must mean "published": a duplicate whose workflow has not started may never have been
      // published (published_at is set at insert; an ingest that died before its publish leaves it
      // set), so publish it again. Harmless if it was: the workflow id is the event id.
      if (!stored.started) {
        await publish(stored.id, stored.publishedAt !== null);
        deps.metrics.republished.inc({ via: 'sender_retry' });
      }
      return { eventId: stored.id, duplicate: true };
    }
    await publish(stored.id, true);
    return { eventId: stored.id, duplicate: false };
  };
}

export type ReceiveWebhook = ReturnType<typeof createReceiveWebhook>;
