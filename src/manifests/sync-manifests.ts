import type { Repositories } from '../db/repositories.js';
import { describeError, isAppError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import { credentialRow, endpointRow, type SecretResolver } from '../custom-resources/to-rows.js';
import type { ManifestSet } from './read-manifests.js';
import { ENABLE_ANNOTATION, MANIFEST_UID_PREFIX } from '../domain/records.js';

const uidOf = (kind: string, ns: string | undefined, name: string) => `${MANIFEST_UID_PREFIX}${kind}/${ns ?? 'default'}/${name}`;

export interface SyncReport {
  endpoints: number;
  credentials: number;
  removed: number;
  errors: string[];
}

/**
 * Makes Postgres match a folder of manifests: the dev-mode twin of the operator's reconcile,
 * through the same row mapping. Rows that came from manifests no longer present are deactivated
 * (endpoints) or deleted (credentials); rows owned by anything else are never touched.
 */
export async function syncManifests(repos: Repositories, set: ManifestSet, logger: Logger): Promise<SyncReport> {
  const errors = [...set.errors];
  const secrets: SecretResolver = async (ns, name, key) => set.secrets.get(`${ns}/${name}`)?.[key];
  const seenEndpoints = new Set<string>();
  const seenCredentials = new Set<string>();
  let endpoints = 0;
  let credentials = 0;

  for (const r of set.endpoints) {
    const uid = uidOf('WebhookEndpoint', r.metadata.namespace, r.metadata.name);
    try {
      await repos.endpoints.upsertByResourceUid(uid, await endpointRow(r, secrets));
      // as under the operator: a new value of the annotation enables a disabled endpoint, once
      const enabled = await repos.endpoints.applyEnableAnnotation(uid, r.metadata.annotations?.[ENABLE_ANNOTATION] ?? null);
      if (enabled?.wasDisabled)
        logger.info(`WebhookEndpoint ${r.metadata.namespace}/${r.metadata.name} enabled by the annotation ${ENABLE_ANNOTATION}`);
      seenEndpoints.add(uid);
      endpoints++;
    } catch (err) {
      errors.push(`WebhookEndpoint ${r.metadata.namespace}/${r.metadata.name}: ${describeError(err)}`);
      // as under the operator: an expression that does not compile leaves the row with its last
      // valid one (a new endpoint has no row: it gets nothing until it is fixed)
      if (isAppError(err) && (err.code === 'invalid_filter' || err.code === 'invalid_transform')) seenEndpoints.add(uid);
    }
  }

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
      const previous = await repos.credentials.findBySource(r.spec.source);
      const row = await credentialRow(r, secrets, previous?.resourceUid === uid ? previous.passwordHash : null);
      if (previous && previous.resourceUid !== uid) await repos.credentials.deleteByResourceUid(previous.resourceUid ?? '');
      await repos.credentials.upsertByResourceUid(uid, row);
      seenCredentials.add(uid);
      credentials++;
    } catch (err) {
      errors.push(`InboundCredential ${id}: ${describeError(err)}`);
    }
  }

  let removed = 0;
  for (const uid of await repos.endpoints.resourceUids(MANIFEST_UID_PREFIX)) {
    if (!seenEndpoints.has(uid) && (await repos.endpoints.deactivateByResourceUid(uid))) removed++;
  }
  for (const uid of await repos.credentials.resourceUids(MANIFEST_UID_PREFIX)) {
    if (!seenCredentials.has(uid) && (await repos.credentials.deleteByResourceUid(uid))) removed++;
  }
  for (const e of errors) logger.warn(`manifest rejected: ${e}`);
  return { endpoints, credentials, removed, errors };
}
