import { API_GROUP, API_VERSION, type InboundCredentialSpec, type WebhookEndpointSpec } from '../custom-resources/specs.js';
import { rfc3339, type KubeObject } from '../kube/api.js';
import type { EndpointState } from '../domain/records.js';

export const FINALIZER = `${API_GROUP}/finalizer`;

export type KindName = 'WebhookEndpoint' | 'InboundCredential';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export interface ResourceStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  endpointId?: string;
  credentialId?: string;
  /** WebhookEndpoint only: its health as Postgres has it (`kubectl get whe` shows it) */
  state?: EndpointState;
  /** WebhookEndpoint with signing StandardWebhooksEd25519: the whpk_ keys receivers verify with, current first */
  signingPublicKeys?: string[];
  /** WebhookEndpoint with spec.ordering: its keys held by a FAILED delivery, as Postgres has it (docs/ordering.md) */
  orderingBlockedKeys?: number;
}

export interface CustomResource<K extends KindName, S> extends KubeObject {
  apiVersion: string;
  kind: K;
  spec: S;
  status?: ResourceStatus;
}

export type WebhookEndpointObject = CustomResource<'WebhookEndpoint', WebhookEndpointSpec>;
export type InboundCredentialObject = CustomResource<'InboundCredential', InboundCredentialSpec>;
export type AnyCustomResource = WebhookEndpointObject | InboundCredentialObject;

export interface SecretObject extends KubeObject {
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  type?: string;
}

export const PLURAL: Record<KindName, string> = {
  WebhookEndpoint: 'webhookendpoints',
  InboundCredential: 'inboundcredentials',
};

/** Collection path of a kind, in one namespace or (namespace undefined) all of them. */
export function collectionPath(kind: KindName, namespace?: string): string {
  return namespace === undefined
    ? `/apis/${API_GROUP}/${API_VERSION}/${PLURAL[kind]}`
    : `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace}/${PLURAL[kind]}`;
}

export const objectPath = (kind: KindName, namespace: string, name: string): string =>
  `${collectionPath(kind, namespace)}/${encodeURIComponent(name)}`;

/** Namespaces are cluster-scoped: one informer, whatever the operator watches. */
export const NAMESPACES_PATH = '/api/v1/namespaces';

export const secretsPath = (namespace?: string): string =>
  namespace === undefined ? '/api/v1/secrets' : `/api/v1/namespaces/${namespace}/secrets`;

/** A ConfigMap: an endpoint's CA bundle may be one (spec.tls.caBundleRef kind ConfigMap). */
export interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

export const configMapsPath = (namespace?: string): string =>
  namespace === undefined ? '/api/v1/configmaps' : `/api/v1/namespaces/${namespace}/configmaps`;

/** Work-queue key of an object: Kind/namespace/name. */
export const keyOf = (kind: KindName, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

export function parseKey(key: string): { kind: KindName; namespace: string; name: string } {
  const [kind, namespace, ...rest] = key.split('/');
  if ((kind !== 'WebhookEndpoint' && kind !== 'InboundCredential') || !namespace || rest.length === 0) {
    throw new Error(`bad work-queue key ${key}`);
  }
  return { kind, namespace, name: rest.join('/') };
}

export function readyCondition(obj: { status?: ResourceStatus }): Condition | undefined {
  return obj.status?.conditions?.find((c) => c.type === 'Ready');
}

/**
 * The status the operator wants, keeping lastTransitionTime when the Ready status did not change
 * (metav1 condition semantics), and other condition types it does not own.
 */
export function desiredStatus(
  obj: { metadata: { generation?: number }; status?: ResourceStatus },
  ready: { status: 'True' | 'False'; reason: string; message: string },
  ids: Pick<ResourceStatus, 'endpointId' | 'credentialId' | 'state' | 'signingPublicKeys' | 'orderingBlockedKeys'>,
  now: Date = new Date(),
): ResourceStatus {
  const generation = obj.metadata.generation ?? 0;
  const previous = readyCondition(obj);
  const condition: Condition = {
    type: 'Ready',
    status: ready.status,
    observedGeneration: generation,
    lastTransitionTime: previous && previous.status === ready.status ? previous.lastTransitionTime : rfc3339(now),
    reason: ready.reason,
    message: ready.message.slice(0, 32_768),
  };
  const others = (obj.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
  const status: ResourceStatus = { observedGeneration: generation, conditions: [condition, ...others] };
  if (ids.endpointId !== undefined) status.endpointId = ids.endpointId;
  if (ids.credentialId !== undefined) status.credentialId = ids.credentialId;
  if (ids.state !== undefined) status.state = ids.state;
  if (ids.signingPublicKeys !== undefined && ids.signingPublicKeys.length > 0) status.signingPublicKeys = ids.signingPublicKeys;
  if (ids.orderingBlockedKeys !== undefined) status.orderingBlockedKeys = ids.orderingBlockedKeys;
  return status;
}

export function sameStatus(a: ResourceStatus | undefined, b: ResourceStatus): boolean {
  return JSON.stringify(normalizeStatus(a ?? {})) === JSON.stringify(normalizeStatus(b));
}

function normalizeStatus(s: ResourceStatus): unknown {
  return {
    observedGeneration: s.observedGeneration ?? null,
    endpointId: s.endpointId ?? null,
    credentialId: s.credentialId ?? null,
    state: s.state ?? null,
    signingPublicKeys: s.signingPublicKeys ?? null,
    orderingBlockedKeys: s.orderingBlockedKeys ?? null,
    conditions: (s.conditions ?? [])
      .map((c) => ({
        type: c.type,
        status: c.status,
        observedGeneration: c.observedGeneration ?? null,
        lastTransitionTime: c.lastTransitionTime,
        reason: c.reason,
        message: c.message,
      }))
      .sort((x, y) => (x.type < y.type ? -1 : 1)),
  };
}

/** Creation order of resources: creationTimestamp (1 s resolution), then namespace/name, then uid. */
export function createdBefore(a: KubeObject, b: KubeObject): boolean {
  const ta = Date.parse(a.metadata.creationTimestamp ?? '') || 0;
  const tb = Date.parse(b.metadata.creationTimestamp ?? '') || 0;
  if (ta !== tb) return ta < tb;
  const na = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
  const nb = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
  if (na !== nb) return na < nb;
  return a.metadata.uid < b.metadata.uid;
}
