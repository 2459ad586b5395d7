import type {
  AttemptRow,
  CredentialViewRow,
  DeliveryListRow,
  EndpointsWithoutDelivery,
  EndpointViewRow,
  EndpointWithoutDeliveryRow,
  EventSummaryRow,
} from '../db/admin-queries.js';
import { redactUrl } from '../config/env-reader.js';
import type { WebhookEvent } from '../domain/records.js';
import type {
  Attempt,
  CredentialView,
  Delivery,
  EndpointView,
  EndpointWithoutDelivery,
  EventDetail,
  EventSummary,
  NoDeliveryReason,
} from './route-schemas.js';
import { endpointState, MANIFEST_UID_PREFIX } from '../domain/records.js';
import { traceIdOf } from '../observability/spans.js';
import { authAndSigningOfRow, toDelivery } from '../db/rows.js';
import { operationalAbout } from './operational-about.js';

// Rows to API resources. Secrets are not even selected by the queries; these only rename and format.

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

// resource_uid is "manifest:<ns>/<name>" in dev mode or a custom resource's uid; name it, not the uid
const managedBy = (resourceUid: string | null, resourceName: string | null = null): string | null =>
  resourceName ?? (resourceUid?.startsWith(MANIFEST_UID_PREFIX) ? resourceUid.slice(MANIFEST_UID_PREFIX.length) : resourceUid);

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The raw body as text when it is valid UTF-8, else base64, and which one it is. */
export function payloadView(payload: Buffer): { payload: string; payloadEncoding: 'utf8' | 'base64' } {
  try {
    return { payload: utf8.decode(payload), payloadEncoding: 'utf8' };
  } catch {
    return { payload: payload.toString('base64'), payloadEncoding: 'base64' };
  }
}

export const deliveryView = (r: DeliveryListRow): Delivery => ({
  id: r.id,
  eventId: r.event_id,
  endpointId: r.endpoint_id,
  source: r.source,
  status: r.status,
  attempts: r.attempts,
  lastResponseStatus: r.last_response_status,
  lastResponseBody: r.last_response_body,
  lastError: r.last_error,
  lastAttemptAt: iso(r.last_attempt_at),
  completedAt: iso(r.completed_at),
  createdAt: r.created_at.toISOString(),
  attemptsUrl: `/api/deliveries/${r.id}/attempts`,
  ordering: orderingView(r),
});

/** An ordered delivery's place in its sequence (docs/ordering.md), as the API shows it. */
function orderingView(r: DeliveryListRow): Delivery['ordering'] {
  const o = toDelivery(r).ordering;
  return o && { key: o.key ?? null, position: o.position, skipped: o.skipped, waitingBehind: o.waitingBehind };
}

export const attemptView = (r: AttemptRow): Attempt => ({
  attempt: r.attempt,
  outcome: r.outcome,
  responseStatus: r.response_status,
  responseBody: r.response_body,
  durationMs: r.duration_ms,
  error: r.error,
  startedAt: r.started_at.toISOString(),
  requestBody: r.request_body,
  requestBodyBytes: r.request_body_bytes,
  receipt: r.receipt,
});

export const eventSummaryView = (r: EventSummaryRow): EventSummary => ({
  id: r.id,
  source: r.source,
  externalEventId: r.external_event_id,
  type: r.event_type,
  status: r.status,
  contentType: r.content_type,
  payloadSize: r.payload_size,
  workflowId: r.workflow_id,
  receivedAt: r.received_at.toISOString(),
  publishedAt: iso(r.published_at),
  completedAt: iso(r.completed_at),
  payloadDroppedAt: iso(r.payload_dropped_at ?? null),
  about: operationalAbout(r.operational_payload),
});

/**
 * Why an endpoint of the event's (source, type) has no delivery of it, claiming no more than its
 * row shows now: prepare creates a row for every active, allowed endpoint of the (source, type)
 * whose filter (if any) matches, disabled ones included (their deliveries are held), so an
 * endpoint that existed when the event was routed and has a filter was filtered out.
 */
export function noDeliveryReason(
  r: Pick<EndpointWithoutDeliveryRow, 'created_after_event' | 'denied_reason' | 'filter'>,
  routed: boolean,
): NoDeliveryReason {
  if (!routed) return 'FANOUT_IN_PROGRESS';
  // created after the event came in: it may not have existed when the event was routed
  if (r.created_after_event) return 'CREATED_AFTER_EVENT';
  if (r.denied_reason !== null) return 'NOT_ALLOWED_BY_SOURCE';
  if (r.filter !== null) return 'FILTER_NOT_MATCHED';
  return 'NO_DELIVERY';
}

const endpointWithoutDeliveryView = (r: EndpointWithoutDeliveryRow, routed: boolean): EndpointWithoutDelivery => ({
  endpointId: r.id,
  name: r.name,
  namespace: r.namespace,
  eventType: r.event_type,
  filter: r.filter,
  reason: noDeliveryReason(r, routed),
});

export const eventDetailView = (e: WebhookEvent, deliveries: DeliveryListRow[], without: EndpointsWithoutDelivery): EventDetail => ({
  id: e.id,
  source: e.source,
  externalEventId: e.externalEventId,
  type: e.eventType,
  status: e.status,
  contentType: e.contentType,
  payloadSize: e.payload.length,
  workflowId: e.workflowId,
  receivedAt: e.receivedAt.toISOString(),
  publishedAt: iso(e.publishedAt),
  completedAt: iso(e.completedAt),
  payloadDroppedAt: iso(e.payloadDroppedAt),
  headers: e.headers,
  ...payloadView(e.payload),
  traceId: traceIdOf(e.traceparent) ?? null,
  deliveries: deliveries.map(deliveryView),
  endpointsWithoutDelivery: without.rows.map((r) => endpointWithoutDeliveryView(r, without.routed)),
  endpointsWithoutDeliveryOmitted: Math.max(0, without.total - without.rows.length),
});

export function endpointView(r: EndpointViewRow): EndpointView {
  const { authType, signingType } = authAndSigningOfRow(r);
  return {
    id: r.id,
    name: r.name,
    source: r.source,
    eventType: r.event_type,
    // a username may be an API key too (Stripe-style key:): the whole userinfo is masked
    url: redactUrl(r.url, false),
    destination: { type: r.destination_type, target: redactUrl(r.url, false) },
    method: r.method,
    auth: {
      type: authType,
      username: authType === 'BASIC' ? r.auth_username : null,
      secretSet: authType !== 'NONE' && r.auth_secret_set,
      // the token endpoint and the client, never the secret (not selected: auth_secret_set only)
      oauth2:
        authType === 'OAUTH2_CLIENT_CREDENTIALS' && r.auth_oauth2
          ? {
              tokenUrl: redactUrl(r.auth_oauth2.tokenUrl, false),
              clientId: r.auth_oauth2.clientId,
              scopes: r.auth_oauth2.scopes,
              audience: r.auth_oauth2.audience,
              clientAuthentication: r.auth_oauth2.clientAuthentication,
              tokenRefusal:
                r.oauth2_token_refusal && r.oauth2_token_refused_at
                  ? { message: r.oauth2_token_refusal, since: r.oauth2_token_refused_at.toISOString() }
                  : null,
              tokenUnavailable:
                r.oauth2_token_unavailable && r.oauth2_token_unavailable_since
                  ? { message: r.oauth2_token_unavailable, since: r.oauth2_token_unavailable_since.toISOString() }
                  : null,
            }
          : null,
    },
    signing: {
      type: signingType,
      secretSet: signingType !== 'NONE' && r.signing_secret_set,
      previousSecretSet: signingType !== 'NONE' && r.previous_signing_secret_set,
      publicKeys: r.signing_public_keys ?? [],
    },
    tls: {
      clientCertificateExpiresAt: iso(r.tls_client_certificate_expires_at ?? null),
      caBundleSet: r.tls_ca_bundle_set,
    },
    proxy: r.proxy_direct === true ? 'Direct' : 'Default',
    customHeaderNames: r.custom_header_names,
    maxAttempts: r.max_attempts,
    timeoutSeconds: r.timeout_seconds,
    retryOnStatus: r.retry_on_status,
    rateLimit: r.rate_limit_per_second === null ? null : { perSecond: r.rate_limit_per_second },
    maxConcurrency: r.max_concurrency,
    // a pause that has ended is no pause: an operator reads "is it paused now?"
    pausedUntil: r.paused_until !== null && r.paused_until.getTime() > Date.now() ? r.paused_until.toISOString() : null,
    active: r.active,
    state: endpointState({ disabledAt: r.disabled_at }),
    autoDisableAfter: r.auto_disable_after,
    consecutiveFailures: r.consecutive_failures,
    disabledAt: iso(r.disabled_at),
    heldDeliveries: r.held_deliveries,
    managedBy: managedBy(r.resource_uid),
    namespace: r.namespace,
    deniedReason: r.denied_reason,
    filter: r.filter,
    transform: r.transform_jsonata === null ? null : { jsonata: r.transform_jsonata },
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export const credentialView = (r: CredentialViewRow): CredentialView => ({
  id: r.id,
  source: r.source,
  username: r.username,
  verification: r.verification_type ?? 'Basic',
  basic: r.username !== null,
  eventIdRule: r.event_id_rule,
  eventTypeRule: r.event_type_rule,
  managedBy: managedBy(r.resource_uid, r.resource_name),
  namespace: r.namespace,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
