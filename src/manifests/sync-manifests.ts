import { createHash } from 'node:crypto';
import type { Repositories } from '../db/repositories.js';
import { describeError, isAppError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import { credentialRow, endpointRow, type SecretResolver } from '../custom-resources/to-rows.js';
import type { ManifestSet } from './read-manifests.js';
import type { DefaultAllowedNamespaces } from '../config/settings.js';
import { ENABLE_ANNOTATION, MANIFEST_UID_PREFIX } from '../domain/records.js';
import { endpointAllowance } from '../custom-resources/allowed-endpoints.js';
import { reservedSource } from '../custom-resources/reserved-source.js';

const uidOf = (kind: string, ns: string | undefined, name: string) => `${MANIFEST_UID_PREFIX}${kind}/${ns ?? 'default'}/${name}`;

export interface SyncReport {
  endpoints: number;
  credentials: number;
  removed: number;
  errors: string[];
  /** one line per endpoint its source does not allow: "WebhookEndpoint ns/name: <reason>: <why>" */
  denied: string[];
}

export interface SyncOptions {
  /** what an InboundCredential without spec.allowedEndpoints allows (TENANCY_DEFAULT_ALLOWED_NAMESPACES) */
  defaultAllowedNamespaces: DefaultAllowedNamespaces;
}

/**
 * credential.not_ready of a credential manifest refused (docs/operations-events.md). Dev mode keeps
 * no status to compare with: each load finds the problem again, so the key is the problem itself,
 * recorded once however many loads see it.
 */
async function recordNotReady(repos: Repositories, r: ManifestSet['credentials'][number], uid: string, message: string): Promise<void> {
  const namespace = r.metadata.namespace ?? 'default';
  await repos.operationalEvents.record({
    type: 'credential.not_ready',
    key: `${uid}:${createHash('sha256').update(message).digest('hex').slice(0, 32)}`,
    subject: {
      kind: 'InboundCredential',
      namespace,
      name: r.metadata.name,
      uid,
      adminApiPath: `/api/inbound-credentials?source=${encodeURIComponent(r.spec.source)}`,
    },
    data: { credential: { namespace, name: r.metadata.name, uid, source: r.spec.source }, reason: 'InvalidSpec', message },
  });
}

/**
 * Makes Postgres match a folder of manifests: the dev-mode twin of the operator's reconcile,
 * through the same row mapping and the same rule of which endpoints a source allows
 * (custom-resources/allowed-endpoints.ts), with the same words. Credentials first, so that each endpoint
 * is decided against the credential rows now in effect. Rows that came from manifests no longer
 * present are deactivated (endpoints) or deleted (credentials); rows owned by anything else are
 * never touched.
 */
export async function syncManifests(repos: Repositories, set: ManifestSet, logger: Logger, opts: SyncOptions): Promise<SyncReport> {
  const errors = [...set.errors];
  const denied: string[] = [];
  const secrets: SecretResolver = async (ns, name, key, from) =>
    (from === 'ConfigMap' ? set.configMaps : set.secrets).get(`${ns}/${name}`)?.[key];
  const seenEndpoints = new Set<string>();
  const seenCredentials = new Set<string>();
  let endpoints = 0;
  let credentials = 0;
  let removed = 0;

  const bySource = new Map<string, string>();
  for (const r of set.credentials) {
    const id = `${r.metadata.namespace}/${r.metadata.name}`;
    const uid = uidOf('InboundCredential', r.metadata.namespace, r.metadata.name);
    const owner = bySource.get(r.spec.source);
    if (owner !== undefined) {
      errors.push(`InboundCredential ${id}: source "${r.spec.source}" already has a credential (${owner})`);
      continue;
    }
    bySource.set(r.spec.source, id);
    try {
      if (r.spec.source === repos.operationalEvents.source) throw reservedSource(r.spec.source);
      const previous = await repos.credentials.findBySource(r.spec.source);
      const row = await credentialRow(r, secrets, previous?.resourceUid === uid ? previous.passwordHash : null);
      if (previous && previous.resourceUid !== uid) await repos.credentials.deleteByResourceUid(previous.resourceUid ?? '');
      await repos.credentials.upsertByResourceUid(uid, row);
      seenCredentials.add(uid);
      credentials++;
    } catch (err) {
      const message = describeError(err);
      errors.push(`InboundCredential ${id}: ${message}`);
      if (isAppError(err) && err.kind === 'permanent') await recordNotReady(repos, r, uid, message);
    }
  }
  for (const uid of await repos.credentials.resourceUids(MANIFEST_UID_PREFIX)) {
    if (!seenCredentials.has(uid) && (await repos.credentials.deleteByResourceUid(uid))) removed++;
  }

  for (const r of set.endpoints) {
    const ns = r.metadata.namespace ?? 'default';
    const uid = uidOf('WebhookEndpoint', ns, r.metadata.name);
    try {
      const row = await endpointRow(r, secrets);
      const allowance = endpointAllowance({
        source: row.source,
        namespace: ns,
        namespaceLabels: set.namespaces.get(ns),
        owner: await repos.credentials.findBySource(row.source),
        defaultFrom: opts.defaultAllowedNamespaces,
        operationsSource: repos.operationalEvents.source,
      });
      await repos.endpoints.upsertByResourceUid(
        uid,
        { ...row, deniedReason: allowance.deniedReason },
        allowance.deniedReason === null ? undefined : allowance.message,
      );
      if (allowance.deniedReason !== null)
        denied.push(`WebhookEndpoint ${ns}/${r.metadata.name}: ${allowance.deniedReason}: ${allowance.message}`);
      // as under the operator: a new value of the annotation enables a disabled endpoint, once
      const enabled = await repos.endpoints.applyEnableAnnotation(uid, r.metadata.annotations?.[ENABLE_ANNOTATION] ?? null);
      if (enabled?.wasDisabled) logger.info(`WebhookEndpoint ${ns}/${r.metadata.name} enabled by the annotation ${ENABLE_ANNOTATION}`);
      seenEndpoints.add(uid);
      endpoints++;
    } catch (err) {
      errors.push(`WebhookEndpoint ${ns}/${r.metadata.name}: ${describeError(err)}`);
      // as under the operator: an expression that does not compile leaves the row with its last
      // valid one (a new endpoint has no row: it gets nothing until it is fixed)
      if (isAppError(err) && (err.code === 'invalid_filter' || err.code === 'invalid_transform' || err.code === 'invalid_ordering_key'))
        seenEndpoints.add(uid);
    }
  }
  for (const uid of await repos.endpoints.resourceUids(MANIFEST_UID_PREFIX)) {
    if (!seenEndpoints.has(uid) && (await repos.endpoints.deactivateByResourceUid(uid))) removed++;
  }

  for (const e of errors) logger.warn(`manifest rejected: ${e}`);
  for (const d of denied) logger.warn(`endpoint not allowed by its source: ${d}`);
  return { endpoints, credentials, removed, errors, denied };
}
