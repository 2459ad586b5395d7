import { cloudEventAttributes } from '../../src/delivery/body-format.js';
import type { HttpTarget } from '../../src/delivery/destination.js';
import { composeMessage, type Message, type MessageMeta, type Signing } from '../../src/delivery/message.js';
import { invalidRequest, type DeliveryOutcome } from '../../src/delivery/types.js';
import { createHttpDestination, type HttpDestinationOptions } from '../../src/destinations/http/http-destination.js';
import { buildHeaders } from '../../src/destinations/http/http-headers.js';
import { isAppError } from '../../src/domain/errors.js';
import type { AuthType, HttpMethod } from '../../src/domain/statuses.js';
import type { TraceCarrier } from '../../src/observability/spans.js';

/** One HTTP attempt as these tests write it: the message's parts and the target's, side by side. */
export interface OutboundRequest {
  url: string;
  method: HttpMethod;
  body: Buffer;
  contentType: string | null;
  formatHeaders?: Record<string, string>;
  auth: { type: AuthType; username: string | null; secret: string | null };
  /** absent: no signature */
  signing?: Signing;
  customHeaders: Record<string, string>;
  timeoutMs: number;
  retryOnStatus: readonly number[];
  meta: MessageMeta;
  trace?: TraceCarrier | undefined;
}

/** An outbound request to `url` as the worker builds one, with test defaults. */
export function outbound(url: string, overrides: Partial<OutboundRequest> = {}): OutboundRequest {
  return {
    url,
    method: 'POST',
    body: Buffer.from('{"id":"evt_1","type":"payment.succeeded"}'),
    contentType: 'application/json',
    auth: { type: 'NONE', username: null, secret: null },
    customHeaders: {},
    timeoutMs: 5_000,
    retryOnStatus: [],
    meta: {
      eventId: '0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10',
      source: 'stripe',
      eventType: 'payment.succeeded',
      deliveryId: '5d2c0f3e-1a7b-4c55-8d8e-2b9f0a6c7e31',
      attempt: 1,
    },
    ...overrides,
  };
}

/** The message the deliver activity would build of it (signed by message.ts) and the HTTP target. Throws as message.ts does. */
export function messageAndTarget(req: OutboundRequest, now?: () => number): { message: Message; target: HttpTarget } {
  const message = composeMessage(
    {
      body: req.body,
      contentType: req.contentType,
      format: req.formatHeaders ? 'CloudEventsBinary' : 'Raw',
      attributes: cloudEventAttributes({ id: req.meta.eventId, source: req.meta.source, type: req.meta.eventType, time: new Date(0) }),
      ...(req.formatHeaders ? { formatHeaders: req.formatHeaders } : {}),
      signing: req.signing ?? { type: 'NONE', secret: null },
      meta: req.meta,
      orderingKey: null,
    },
    now,
  );
  return {
    message: req.trace ? { ...message, trace: req.trace } : message,
    target: {
      type: 'HTTP',
      url: req.url,
      method: req.method,
      auth: { type: req.auth.type, username: req.auth.username, secret: req.auth.secret },
      customHeaders: req.customHeaders,
      retryOnStatus: req.retryOnStatus,
    },
  };
}

/** The headers the HTTP destination sends for it. */
export function headersOf(req: OutboundRequest, now?: () => number): Record<string, string> {
  const { message, target } = messageAndTarget(req, now);
  return buildHeaders(message, target);
}

/** The HTTP destination behind a sender of whole requests, as the deliver activity drives it. */
export interface HttpSender {
  send(req: OutboundRequest): Promise<DeliveryOutcome>;
  close(): Promise<void>;
}

export function createHttpSender(opts: HttpDestinationOptions): HttpSender {
  const destination = createHttpDestination(opts);
  return {
    send(req) {
      let built: ReturnType<typeof messageAndTarget>;
      try {
        built = messageAndTarget(req);
      } catch (err) {
        // as the deliver activity does: a message that can not be built is an invalid request
        if (isAppError(err) && err.kind === 'permanent') return Promise.resolve(invalidRequest(err.message));
        throw err;
      }
      return destination.send(built.message, built.target, { timeoutMs: req.timeoutMs });
    },
    close: () => destination.close(),
  };
}
