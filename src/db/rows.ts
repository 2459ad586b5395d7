import type {
  AllowedEndpoints,
  DeniedReason,
  Delivery,
  DestinationSecrets,
  DeliveryOrdering,
  Endpoint,
  EndpointDestination,
  EndpointFormat,
  ExtractionRule,
  InboundCredential,
  InboundFormat,
  OAuth2Client,
  OrderingPolicy,
  SignatureVerification,
  WebhookEvent,
} from '../domain/records.js';
import { HTTP_DESTINATION } from '../domain/records.js';
import { decodeOrderingKey } from '../domain/ordering.js';
import type { AuthType, DeliveryStatus, EventStatus, HttpMethod, SigningType } from '../domain/statuses.js';

// Row shapes as pg returns them, and their mapping to domain records.

export interface CredentialRow {
  id: string;
  source: string;
  username: string | null;
  password_hash: string | null;
  verification: SignatureVerification | null;
  event_id_rule: ExtractionRule | null;
  event_type_rule: ExtractionRule | null;
  format: InboundFormat;
  resource_uid: string | null;
  resource_name: string | null;
  retention_max_age_seconds: number | null;
  retention_payload_max_age_seconds: number | null;
  namespace: string | null;
  allowed_endpoints: AllowedEndpoints | null;
  updated_at: Date;
}

export const toCredential = (r: CredentialRow): InboundCredential => ({
  id: r.id,
  source: r.source,
  username: r.username,
  passwordHash: r.password_hash,
  verification: r.verification,
  eventIdRule: r.event_id_rule,
  eventTypeRule: r.event_type_rule,
  format: r.format ?? 'Raw',
  resourceUid: r.resource_uid,
  resourceName: r.resource_name,
  retentionMaxAgeSeconds: r.retention_max_age_seconds ?? null,
  retentionPayloadMaxAgeSeconds: r.retention_payload_max_age_seconds ?? null,
  namespace: r.namespace ?? null,
  allowedEndpoints: r.allowed_endpoints ?? null,
  updatedAt: r.updated_at,
});

export interface EndpointRow {
  id: string;
  name: string;
  source: string;
  event_type: string | null;
  url: string;
  method: HttpMethod;
  /** AuthType, or the signing's type when there is no auth (COMBINED_AUTH_TYPES) */
  auth_type: AuthType | CombinedAuthType;
  auth_username: string | null;
  auth_secret: string | null;
  /** migration 085: OAUTH2_CLIENT_CREDENTIALS' token endpoint and client (no secret); absent from a row read before it ran */
  auth_oauth2?: OAuth2Client | null;
  /** migration 078; absent from a row read before it ran */
  signing_type?: SigningType;
  signing_secret: string | null;
  previous_signing_secret: string | null;
  /** migration 082; absent from a row read before it ran */
  signing_public_keys?: string[];
  /** migration 084 (spec.tls); absent from a row read before it ran */
  tls_client_certificate?: string | null;
  tls_client_key?: string | null;
  tls_ca_bundle?: string | null;
  tls_client_certificate_expires_at?: Date | null;
  custom_headers: Record<string, string>;
  max_attempts: number;
  timeout_seconds: number;
  retry_on_status: number[];
  rate_limit_per_second: number | null;
  max_concurrency: number | null;
  paused_until: Date | null;
  active: boolean;
  auto_disable_after: number;
  propagate_trace_context: boolean;
  /** migration 086 (spec.proxy Direct); absent from a row read before it ran */
  proxy_direct?: boolean;
  format: EndpointFormat;
  filter: string | null;
  transform_jsonata: string | null;
  /** migration 081 (docs/ordering.md): NULL both when not ordered */
  ordering_key_cel: string | null;
  ordering_on_failure: OrderingPolicy | null;
  /** migration 077: prepare inserts its rows before its filter decides (activities/filter-forecast.ts) */
  filter_expects_accept: boolean;
  /** migration 083: spec.destination without its secrets; null (or absent before 083): HTTP */
  destination?: EndpointDestination | null;
  /** migration 083: the destination's credentials from Secrets of the endpoint's namespace; never selected for the API */
  destination_secrets?: DestinationSecrets | null;
  consecutive_failures: number;
  disabled_at: Date | null;
  /** migration 089 (absent before it ran): an OAuth2 endpoint's credentials refused by its token endpoint */
  oauth2_token_refusal?: string | null;
  oauth2_token_refused_at?: Date | null;
  /** migration 092 (absent before it ran): an OAuth2 endpoint's token endpoint unavailable, and since when */
  oauth2_token_unavailable?: string | null;
  oauth2_token_unavailable_since?: Date | null;
  namespace: string | null;
  denied_reason: DeniedReason | null;
  resource_uid: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Before migration 078, auth_type also said the signing (HMAC, STANDARD_WEBHOOKS), and an
 * endpoint had one or the other. An endpoint with a signing and no auth is still written so
 * (signingColumns), so that a worker of the release before reads the row as it did, and signs,
 * while a rolling upgrade has both releases running.
 */
const COMBINED_AUTH_TYPES = ['HMAC', 'STANDARD_WEBHOOKS'] as const satisfies readonly SigningType[];
type CombinedAuthType = (typeof COMBINED_AUTH_TYPES)[number];
const isCombined = (t: AuthType | CombinedAuthType): t is CombinedAuthType => (COMBINED_AUTH_TYPES as readonly string[]).includes(t);

/** An endpoint's auth and signing, from its row's auth_type and signing_type. */
export function authAndSigningOfRow(r: Pick<EndpointRow, 'auth_type' | 'signing_type'>): { authType: AuthType; signingType: SigningType } {
  if (isCombined(r.auth_type)) return { authType: 'NONE', signingType: r.auth_type };
  return { authType: r.auth_type, signingType: r.signing_type ?? 'NONE' };
}

/** The row's auth_type and signing_type of an endpoint's auth and signing (see COMBINED_AUTH_TYPES). */
export function authAndSigningColumns(
  authType: AuthType,
  signingType: SigningType,
): Pick<EndpointRow, 'auth_type'> & { signing_type: SigningType } {
  const combined = authType === 'NONE' && (COMBINED_AUTH_TYPES as readonly string[]).includes(signingType);
  return { auth_type: combined ? (signingType as CombinedAuthType) : authType, signing_type: signingType };
}

export const toEndpoint = (r: EndpointRow): Endpoint => ({
  id: r.id,
  name: r.name,
  source: r.source,
  eventType: r.event_type,
  url: r.url,
  method: r.method,
  ...authAndSigningOfRow(r),
  authUsername: r.auth_username,
  authSecret: r.auth_secret,
  authOAuth2: r.auth_oauth2 ?? null,
  signingSecret: r.signing_secret,
  previousSigningSecret: r.previous_signing_secret,
  signingPublicKeys: r.signing_public_keys ?? [],
  tlsClientCertificate: r.tls_client_certificate ?? null,
  tlsClientKey: r.tls_client_key ?? null,
  tlsCaBundle: r.tls_ca_bundle ?? null,
  tlsClientCertificateExpiresAt: r.tls_client_certificate_expires_at ?? null,
  customHeaders: r.custom_headers,
  maxAttempts: r.max_attempts,
  timeoutSeconds: r.timeout_seconds,
  retryOnStatus: r.retry_on_status,
  rateLimitPerSecond: r.rate_limit_per_second,
  maxConcurrency: r.max_concurrency,
  pausedUntil: r.paused_until,
  active: r.active,
  autoDisableAfter: r.auto_disable_after,
  // absent from a row read before migration 066 ran: the default
  propagateTraceContext: r.propagate_trace_context ?? true,
  proxyDirect: r.proxy_direct ?? false,
  format: r.format ?? 'Raw',
  // absent from a row read before migration 074 ran: none
  filter: r.filter ?? null,
  transform: r.transform_jsonata ?? null,
  destination: r.destination ?? HTTP_DESTINATION,
  destinationSecrets: r.destination_secrets ?? {},
  // absent from a row read before migration 081 ran: not ordered
  ordering: r.ordering_on_failure ? { key: r.ordering_key_cel ?? null, onFailure: r.ordering_on_failure } : null,
  consecutiveFailures: r.consecutive_failures,
  disabledAt: r.disabled_at,
  tokenRefusal:
    r.oauth2_token_refusal && r.oauth2_token_refused_at ? { message: r.oauth2_token_refusal, at: r.oauth2_token_refused_at } : null,
  tokenUnavailable:
    r.oauth2_token_unavailable && r.oauth2_token_unavailable_since
      ? { message: r.oauth2_token_unavailable, since: r.oauth2_token_unavailable_since }
      : null,
  namespace: r.namespace ?? null,
  deniedReason: r.denied_reason ?? null,
  resourceUid: r.resource_uid,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface EventRow {
  id: string;
  source: string;
  external_event_id: string | null;
  event_type: string | null;
  payload: Buffer;
  content_type: string | null;
  headers: Record<string, string>;
  status: EventStatus;
  workflow_id: string | null;
  published_at: Date | null;
  received_at: Date;
  completed_at: Date | null;
  traceparent: string | null;
  /** absent from statements that do not select it (the delivery path's) */
  payload_dropped_at?: Date | null;
}

export const toEvent = (r: EventRow): WebhookEvent => ({
  id: r.id,
  source: r.source,
  externalEventId: r.external_event_id,
  eventType: r.event_type,
  payload: r.payload,
  contentType: r.content_type,
  headers: r.headers,
  status: r.status,
  workflowId: r.workflow_id,
  publishedAt: r.published_at,
  receivedAt: r.received_at,
  completedAt: r.completed_at,
  traceparent: r.traceparent ?? null,
  payloadDroppedAt: r.payload_dropped_at ?? null,
});

export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  attempts: number;
  last_response_status: number | null;
  last_response_body: string | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  completed_at: Date | null;
  created_at: Date;
  /** migration 081 (docs/ordering.md); absent from rows read before it ran */
  ordering_position?: string | number | null;
  ordering_key?: string | null;
  ordering_skipped?: boolean;
  ordering_waiter?: string | null;
  ordering_behind?: string | null;
  ordering_waiting_since?: Date | string | null;
}

/** An ordered delivery's place in its sequence; null when it is not ordered. */
function orderingOf(r: DeliveryRow): DeliveryOrdering | null {
  if (r.ordering_position === null || r.ordering_position === undefined) return null;
  const waiting = r.ordering_waiter !== null && r.ordering_waiter !== undefined;
  const since = r.ordering_waiting_since ?? null;
  return {
    position: Number(r.ordering_position),
    key: decodeOrderingKey(r.ordering_key ?? null),
    skipped: r.ordering_skipped ?? false,
    waitingBehind: waiting ? (r.ordering_behind ?? null) : null,
    waitingSince: waiting && since !== null ? new Date(since) : null,
  };
}

export const toDelivery = (r: DeliveryRow): Delivery => ({
  id: r.id,
  eventId: r.event_id,
  endpointId: r.endpoint_id,
  status: r.status,
  attempts: r.attempts,
  lastResponseStatus: r.last_response_status,
  lastResponseBody: r.last_response_body,
  lastError: r.last_error,
  lastAttemptAt: r.last_attempt_at,
  completedAt: r.completed_at,
  createdAt: r.created_at,
  ordering: orderingOf(r),
});
