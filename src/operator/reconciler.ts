import type { DefaultAllowedNamespaces } from '../config/settings.js';
import type { CredentialSpec } from '../db/credentials.js';
import type { EndpointSpec } from '../db/endpoints.js';
import type { OperationalEvent } from '../db/operational-events.js';
import { ENABLE_ANNOTATION, endpointState, MANIFEST_UID_PREFIX, type InboundCredential } from '../domain/records.js';
import { ERROR_CODES, type ErrorCodeSpec } from '../domain/error-codes.js';
import { describeError, isAppError, permanent } from '../domain/errors.js';
import type { OperatorMetrics } from '../metrics/operator-metrics.js';
import type { Logger } from '../observability/logger.js';
import { WebhookEndpointSpec } from '../custom-resources/specs.js';
import { credentialRow, endpointRow, type SecretResolver } from '../custom-resources/to-rows.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import type { KubeApi } from '../kube/api.js';
import {
  FINALIZER,
  createdBefore,
  desiredStatus,
  keyOf,
  objectPath,
  parseKey,
  readyCondition,
  sameStatus,
  type AnyCustomResource,
  type InboundCredentialObject,
  type KindName,
  type ResourceStatus,
  type ConfigMapObject,
  type SecretObject,
  type WebhookEndpointObject,
} from './kube-objects.js';
import { credentialMatches, endpointMatches, type OperatorStore } from './store.js';
import { credentialSpecProblem, specProblem } from '../custom-resources/validate.js';
import { endpointAllowance } from '../custom-resources/allowed-endpoints.js';
import { reservedSource } from '../custom-resources/reserved-source.js';

/**
 * One reconcile per kind, kubebuilder style: get the resource (NotFound ends it) -> being
 * deleted? run the cleanup the finalizer holds it for, then release it -> make sure the
 * finalizer is there -> sync Postgres -> write the Ready condition with observedGeneration.
 * A spec or Secret problem is not an error: it ends as Ready=False with a reason, a Warning
 * Event, and nothing written. Anything else (Postgres or the API server unavailable) is thrown,
 * and the controller retries the key with backoff.
 */
export type ReconcileResult = 'synced' | 'unchanged' | 'not_ready' | 'deleted' | 'gone';

export interface ReconcilerDeps {
  api: KubeApi;
  store: OperatorStore;
  /**
   * The resource as the informer cache has it (client-go's lister): reconcile reads no object from
   * the API server. A cache behind our own last write makes a write with its resourceVersion
   * answer 409, which requeues the key with backoff, as in controller-runtime.
   */
  cached(kind: KindName, namespace: string, name: string): AnyCustomResource | undefined;
  /** a Secret from the informer cache */
  secret(namespace: string, name: string): SecretObject | undefined;
  /** a ConfigMap from the informer cache (an endpoint's CA bundle); absent: none is known */
  configMap?(namespace: string, name: string): ConfigMapObject | undefined;
  /** every InboundCredential the operator watches (informer cache) */
  credentials(): readonly InboundCredentialObject[];
  /** every WebhookEndpoint the operator watches (informer cache) */
  endpoints(): readonly WebhookEndpointObject[];
  /** a Namespace's labels (informer cache); undefined when it is not known */
  namespaceLabels(namespace: string): Readonly<Record<string, string>> | undefined;
  /** what a credential without spec.allowedEndpoints allows (TENANCY_DEFAULT_ALLOWED_NAMESPACES) */
  defaultAllowedNamespaces: DefaultAllowedNamespaces;
  /** whether rows of resources in this namespace belong to this operator (WATCH_NAMESPACE) */
  watchesNamespace(namespace: string): boolean;
  enqueue(key: string, trigger: string): void;
  recorder: EventRecorder;
  metrics: OperatorMetrics;
  logger: Logger;
}

interface Outcome {
  result: 'synced' | 'unchanged' | 'not_ready';
  ready: { status: 'True' | 'False'; reason: string; message: string };
  ids: Pick<ResourceStatus, 'endpointId' | 'credentialId' | 'state' | 'signingPublicKeys' | 'orderingBlockedKeys'>;
  /** InboundCredential: the sources whose credential row this reconcile wrote or deleted */
  sources?: string[];
}

const isUniqueViolation = (err: unknown): boolean => isAppError(err) && err.code === 'unique_violation';

/** credential.not_ready: the credential's Ready turned False (docs/operations-events.md). */
function credentialNotReady(obj: InboundCredentialObject, ready: Outcome['ready']): OperationalEvent {
  const namespace = obj.metadata.namespace ?? 'default';
  return {
    type: 'credential.not_ready',
    key: `${obj.metadata.uid}:${obj.metadata.resourceVersion ?? ''}`,
    subject: {
      kind: 'InboundCredential',
      namespace,
      name: obj.metadata.name,
      uid: obj.metadata.uid,
      adminApiPath: `/api/inbound-credentials?source=${encodeURIComponent(obj.spec.source)}`,
    },
    data: {
      credential: { namespace, name: obj.metadata.name, uid: obj.metadata.uid, source: obj.spec.source },
      reason: ready.reason,
      message: ready.message,
    },
  };
}

export function createReconciler(deps: ReconcilerDeps) {
  const { api, store, metrics, logger } = deps;
  /** uid -> secret version + stored hash, so an unchanged password is not bcrypt-compared again */
  const hashMemo = new Map<string, { secretVersion: string; hash: string }>();

  const resolver: SecretResolver = async (namespace, name, key, from = 'Secret') => {
    if (from === 'ConfigMap') {
      const map = deps.configMap?.(namespace, name);
      if (!map) throw permanent('secret_not_found', `ConfigMap ${namespace}/${name} not found`);
      const binary = map.binaryData?.[key];
      return map.data?.[key] ?? (binary === undefined ? undefined : Buffer.from(binary, 'base64').toString('utf8'));
    }
    const secret = deps.secret(namespace, name);
    if (!secret) throw permanent('secret_not_found', `Secret ${namespace}/${name} not found`);
    const b64 = secret.data?.[key];
    return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
  };

  function notReady(err: unknown, ids: Outcome['ids'], keptRow: boolean): Outcome {
    if (!isAppError(err) || err.kind !== 'permanent') throw err;
    const spec: ErrorCodeSpec = ERROR_CODES[err.code];
    const reason = spec.reason ?? 'InvalidSpec';
    const kept = keptRow ? '; the row written for the last good configuration stays in effect' : '; nothing was written';
    return { result: 'not_ready', ready: { status: 'False', reason, message: `${err.message}${kept}` }, ids };
  }

  async function syncEndpoint(obj: WebhookEndpointObject): Promise<Outcome> {
    const existing = await store.endpointByUid(obj.metadata.uid);
    const ids = existing ? { endpointId: existing.id } : {};
    const problem = specProblem(WebhookEndpointSpec, obj.spec);
    if (problem) return notReady(permanent('invalid_spec', problem), ids, existing !== undefined);
    let row: EndpointSpec;
    try {
      row = await endpointRow(obj, resolver);
    } catch (err) {
      return notReady(err, ids, existing !== undefined);
    }
    // May it subscribe to its source? Asked of the source's credential row in effect, on every
    // reconcile: a credential, its allowedEndpoints or the namespace's labels changing enqueue it.
    const namespace = obj.metadata.namespace ?? 'default';
    const allowance = endpointAllowance({
      source: row.source,
      namespace,
      namespaceLabels: deps.namespaceLabels(namespace),
      owner: await store.repos.credentials.findBySource(row.source),
      defaultFrom: deps.defaultAllowedNamespaces,
      operationsSource: store.repos.operationalEvents.source,
    });
    row = { ...row, deniedReason: allowance.deniedReason };
    const ready = (id: string): Outcome['ready'] =>
      allowance.deniedReason === null
        ? readyTrue(`webhook_endpoint ${id} matches the spec`)
        : { status: 'False', reason: allowance.deniedReason, message: allowance.message };
    const result = (written: 'synced' | 'unchanged'): Outcome['result'] => (allowance.deniedReason === null ? written : 'not_ready');
    if (existing && endpointMatches(existing, row)) {
      return { result: result('unchanged'), ready: ready(existing.id), ids };
    }
    const saved = await store.repos.endpoints.upsertByResourceUid(
      obj.metadata.uid,
      row,
      allowance.deniedReason === null ? undefined : allowance.message,
    );
    metrics.rowWrites.inc({ kind: 'WebhookEndpoint', action: existing ? 'updated' : 'created' });
    if (existing && existing.deniedReason === null && allowance.deniedReason !== null) {
      logger.info(
        { resource: `${namespace}/${obj.metadata.name}`, reason: allowance.deniedReason },
        'endpoint no longer allowed by its source: nothing more is sent to it',
      );
    }
    return { result: result('synced'), ready: ready(saved.id), ids: { endpointId: saved.id } };
  }

  async function syncCredential(obj: InboundCredentialObject): Promise<Outcome> {
    const uid = obj.metadata.uid;
    const problem = credentialSpecProblem(obj.spec);
    const existing = await store.credentialByUid(uid);
    if (problem) return notReady(permanent('invalid_spec', problem), existing ? { credentialId: existing.id } : {}, existing !== undefined);
    if (obj.spec.source === store.repos.operationalEvents.source) {
      // the service is this source's only sender (docs/operations-events.md); a row written
      // before the name was reserved goes, so ingest has nothing to verify a sender against
      const sources = existing && (await store.repos.credentials.deleteByResourceUid(uid)) ? [existing.source] : [];
      return { ...notReady(reservedSource(obj.spec.source), {}, false), sources };
    }

    // One credential per source: the earliest resource keeps it, the later ones are not Ready.
    const earlier = deps
      .credentials()
      .filter((c) => c.metadata.uid !== uid && !c.metadata.deletionTimestamp && c.spec.source === obj.spec.source)
      .find((c) => createdBefore(c, obj));
    if (earlier) {
      let sources: string[] = [];
      if (existing && (await store.repos.credentials.deleteByResourceUid(uid))) {
        metrics.rowWrites.inc({ kind: 'InboundCredential', action: 'deleted' });
        sources = [existing.source];
      }
      return {
        sources,
        result: 'not_ready',
        ready: {
          status: 'False',
          reason: 'SourceConflict',
          message: `source "${obj.spec.source}" is already configured by InboundCredential ${earlier.metadata.namespace}/${earlier.metadata.name}, created earlier; one source has one credential`,
        },
        ids: {},
      };
    }

    const secretRef = obj.spec.passwordSecretRef;
    const secret = secretRef && deps.secret(obj.metadata.namespace ?? 'default', secretRef.name);
    const secretVersion = `${secret?.metadata.uid ?? ''}@${secret?.metadata.resourceVersion ?? ''}/${secretRef?.key ?? ''}`;
    // The same Secret version as when the stored hash was last checked: hand credentialRow the
    // hash itself (a hash in the Secret is stored as it is), which skips a bcrypt compare.
    const memo = hashMemo.get(uid);
    const memoHit = existing !== undefined && memo?.secretVersion === secretVersion && memo.hash === existing.passwordHash;
    const storedHash = existing?.passwordHash ?? undefined;
    // only the password is read from the memo: the signing secrets of a verification are read as they are
    const source: SecretResolver = memoHit
      ? async (ns, name, key) => (secretRef?.name === name && secretRef.key === key ? storedHash : resolver(ns, name, key))
      : resolver;
    let row: CredentialSpec;
    try {
      row = await credentialRow(obj, source, existing?.passwordHash);
    } catch (err) {
      return notReady(err, existing ? { credentialId: existing.id } : {}, existing !== undefined);
    }
    if (existing && credentialMatches(existing, row)) {
      if (row.passwordHash !== null) hashMemo.set(uid, { secretVersion, hash: row.passwordHash });
      return {
        result: 'unchanged',
        ready: readyTrue(`webhook_inbound_credential ${existing.id} matches the spec`),
        ids: { credentialId: existing.id },
      };
    }
    let saved;
    try {
      saved = await store.repos.credentials.upsertByResourceUid(uid, row);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const taken = await takeOver(obj, row);
      if ('conflict' in taken) {
        return { result: 'not_ready', ready: { status: 'False', reason: 'SourceConflict', message: taken.conflict }, ids: {} };
      }
      saved = taken.saved;
    }
    if (row.passwordHash !== null) hashMemo.set(uid, { secretVersion, hash: row.passwordHash });
    metrics.rowWrites.inc({ kind: 'InboundCredential', action: existing ? 'updated' : 'created' });
    return {
      sources: [...new Set([row.source, ...(existing ? [existing.source] : [])])],
      result: 'synced',
      ready: readyTrue(`webhook_inbound_credential ${saved.id} matches the spec`),
      ids: { credentialId: saved.id },
    };
  }

  /** The source's row belongs to someone else: take it over from an orphan or a later resource. */
  async function takeOver(obj: InboundCredentialObject, row: CredentialSpec): Promise<{ conflict: string } | { saved: InboundCredential }> {
    const holder = await store.repos.credentials.findBySource(row.source);
    if (!holder) throw new Error('unique violation on the source, but no row holds it: retrying');
    const ownerUid = holder.resourceUid;
    const ownerName = holder.resourceName ?? 'an unmanaged row';
    const ownerNs = holder.resourceName?.split('/')[0] ?? '';
    const live = deps.credentials().find((c) => c.metadata.uid === ownerUid);
    const orphan = ownerUid !== null && !ownerUid.startsWith(MANIFEST_UID_PREFIX) && !live && deps.watchesNamespace(ownerNs);
    const loser = live !== undefined && createdBefore(obj, live);
    if (!ownerUid || (!orphan && !loser)) {
      return {
        conflict: `source "${row.source}" already has a credential in the database, owned by ${ownerName}, which this operator does not manage`,
      };
    }
    const saved = await store.takeOverCredential(ownerUid, obj.metadata.uid, row);
    if (live) deps.enqueue(keyOf('InboundCredential', live.metadata.namespace ?? 'default', live.metadata.name), 'peer');
    logger.info({ source: row.source, from: ownerName }, 'took over the credential row of the source');
    return { saved };
  }

  /**
   * Endpoint health on top of the sync (docs/endpoint-health.md): a new value of the annotation
   * webhookfanout.io/enable enables the endpoint (the row remembers the value acted on, so it acts
   * once), then state and Ready follow the row: DISABLED is Ready=False, reason AutoDisabled.
   */
  async function endpointHealth(obj: WebhookEndpointObject, outcome: Outcome): Promise<Outcome> {
    const uid = obj.metadata.uid;
    const enabled = await store.repos.endpoints.applyEnableAnnotation(uid, obj.metadata.annotations?.[ENABLE_ANNOTATION] ?? null);
    if (enabled?.wasDisabled)
      logger.info(
        { resource: `${obj.metadata.namespace}/${obj.metadata.name}` },
        `endpoint enabled by the annotation ${ENABLE_ANNOTATION}`,
      );
    const row = await store.endpointByUid(uid);
    if (!row) return outcome;
    // the certificate in effect: the row's (an expired replacement leaves the last good one, whose expiry the alert watches)
    const endpoint = `${obj.metadata.namespace ?? 'default'}/${obj.metadata.name}`;
    if (row.tlsClientCertificateExpiresAt)
      metrics.clientCertificateExpiry.set({ endpoint }, row.tlsClientCertificateExpiresAt.getTime() / 1000);
    else metrics.clientCertificateExpiry.remove({ endpoint });
    const state = endpointState(row);
    // the public keys in effect: the row's, which a spec that is not Ready leaves as they were
    // an ordered endpoint's blocked keys (docs/ordering.md), the column `kubectl get whe` shows;
    // counted for the active ordered rows, as the health poll counts them
    const ordered = row.ordering !== null && row.active;
    const blocked = ordered ? { orderingBlockedKeys: await store.repos.ordering.blockedKeysOf(row.id) } : {};
    const ids = { ...outcome.ids, state, signingPublicKeys: row.signingPublicKeys, ...blocked };
    if (outcome.ready.status === 'False') return { ...outcome, ids };
    if (state === 'ACTIVE') {
      // OAuth2: the token endpoint refuses the client credentials the row has (the worker wrote it; a new secret clears it)
      if (row.tokenRefusal === null || !row.active) return { ...outcome, ids };
      const refused =
        `since ${row.tokenRefusal.at.toISOString()} the token endpoint refuses the client credentials: ${row.tokenRefusal.message}. ` +
        `Its deliveries wait without spending attempts; fix the client secret or key (the Secret of spec.auth.oauth2), ` +
        `or the client at the token endpoint, and they go, in order where ordered`;
      return { ...outcome, ids, ready: { status: 'False', reason: 'TokenRequestRefused', message: refused } };
    }
    const message =
      `disabled since ${row.disabledAt?.toISOString() ?? '?'}: ${row.autoDisableAfter} deliveries in a row ended FAILED ` +
      `(spec.autoDisable.afterConsecutiveFailures). Its deliveries fail at once ("endpoint disabled") and are held; ` +
      `set the annotation ${ENABLE_ANNOTATION} to a new value (or POST /api/endpoints/${row.id}/enable) to enable it ` +
      `and redeliver them once, oldest first`;
    return { ...outcome, ids, ready: { status: 'False', reason: 'AutoDisabled', message } };
  }

  const readyTrue = (message: string) => ({ status: 'True' as const, reason: 'Synced', message });

  /** The endpoints of sources whose credential row changed: whether they may subscribe is decided again. */
  function enqueueSubscribers(sources: readonly string[]): void {
    if (sources.length === 0) return;
    for (const e of deps.endpoints()) {
      if (sources.includes(e.spec.source))
        deps.enqueue(keyOf('WebhookEndpoint', e.metadata.namespace ?? 'default', e.metadata.name), 'credential');
    }
  }

  async function cleanup(kind: KindName, obj: AnyCustomResource): Promise<void> {
    if (kind === 'WebhookEndpoint') {
      metrics.clientCertificateExpiry.remove({ endpoint: `${obj.metadata.namespace ?? 'default'}/${obj.metadata.name}` });
      if (await store.repos.endpoints.deactivateByResourceUid(obj.metadata.uid)) {
        metrics.rowWrites.inc({ kind, action: 'deactivated' });
      }
    } else {
      hashMemo.delete(obj.metadata.uid);
      const source = (obj as InboundCredentialObject).spec.source;
      if (await store.repos.credentials.deleteByResourceUid(obj.metadata.uid)) {
        metrics.rowWrites.inc({ kind, action: 'deleted' });
        enqueueSubscribers([source]);
      }
      // a later resource for the same source may now take it
      for (const c of deps.credentials()) {
        if (c.metadata.uid !== obj.metadata.uid && c.spec.source === source) {
          deps.enqueue(keyOf('InboundCredential', c.metadata.namespace ?? 'default', c.metadata.name), 'peer');
        }
      }
    }
  }

  /** Merge patch with the resourceVersion read: a concurrent change answers 409 and is retried. */
  async function setFinalizers(kind: KindName, obj: AnyCustomResource, finalizers: string[]): Promise<AnyCustomResource> {
    return api.patch<AnyCustomResource>(objectPath(kind, obj.metadata.namespace ?? 'default', obj.metadata.name), {
      metadata: { resourceVersion: obj.metadata.resourceVersion, finalizers },
    });
  }

  async function writeStatus(kind: KindName, obj: AnyCustomResource, outcome: Outcome): Promise<boolean> {
    const status = desiredStatus(obj, outcome.ready, outcome.ids);
    if (sameStatus(obj.status, status)) return false;
    const previous = readyCondition(obj);
    if (kind === 'InboundCredential' && outcome.ready.status === 'False' && previous?.status !== 'False') {
      // before the status says so, keyed by the resource's version: a reconcile repeated after a
      // crash in between finds the same version and records nothing more (docs/operations-events.md)
      await store.repos.operationalEvents.record(credentialNotReady(obj as InboundCredentialObject, outcome.ready));
    }
    await api.patch(`${objectPath(kind, obj.metadata.namespace ?? 'default', obj.metadata.name)}/status`, {
      status: {
        ...status,
        endpointId: status.endpointId ?? null,
        credentialId: status.credentialId ?? null,
        state: status.state ?? null,
        signingPublicKeys: status.signingPublicKeys ?? null,
        orderingBlockedKeys: status.orderingBlockedKeys ?? null,
      },
    });
    const changed =
      !previous ||
      previous.status !== outcome.ready.status ||
      previous.reason !== outcome.ready.reason ||
      previous.message !== outcome.ready.message;
    if (outcome.ready.status === 'False' && changed) {
      await deps.recorder.warning(obj, outcome.ready.reason, outcome.ready.message);
    }
    if (obj.status?.state === 'DISABLED' && status.state === 'ACTIVE') {
      await deps.recorder.normal(
        obj,
        'Enabled',
        'the endpoint is enabled again; the deliveries held while it was disabled are redelivered once, oldest first',
      );
    }
    return true;
  }

  async function reconcile(key: string): Promise<ReconcileResult> {
    const { kind, namespace, name } = parseKey(key);
    let obj = deps.cached(kind, namespace, name);
    if (!obj) return 'gone';
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(FINALIZER)) return 'gone';
      await cleanup(kind, obj);
      await setFinalizers(
        kind,
        obj,
        finalizers.filter((f) => f !== FINALIZER),
      );
      logger.info({ key }, 'resource deleted: rows cleaned up, finalizer removed');
      return 'deleted';
    }
    if (!finalizers.includes(FINALIZER)) obj = await setFinalizers(kind, obj, [...finalizers, FINALIZER]);

    let outcome: Outcome;
    try {
      outcome =
        kind === 'WebhookEndpoint'
          ? await endpointHealth(obj as WebhookEndpointObject, await syncEndpoint(obj as WebhookEndpointObject))
          : await syncCredential(obj as InboundCredentialObject);
    } catch (err) {
      await deps.recorder.warning(obj, 'SyncFailed', `could not sync to Postgres, retrying: ${describeError(err)}`);
      throw err;
    }
    enqueueSubscribers(outcome.sources ?? []);
    const wroteStatus = await writeStatus(kind, obj, outcome);
    if (outcome.result === 'not_ready') {
      logger.info({ key, reason: outcome.ready.reason, message: outcome.ready.message }, 'resource not ready');
    } else if (outcome.result === 'synced' || wroteStatus) {
      logger.info({ key, result: outcome.result }, 'resource reconciled');
    }
    return outcome.result;
  }

  return { reconcile };
}

export type Reconciler = ReturnType<typeof createReconciler>;
