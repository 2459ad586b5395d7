import type { AllowedEndpoints, ExtractionRule, InboundCredential, InboundFormat, SignatureVerification } from '../domain/records.js';
import type { Db } from './knex.js';
import { toCredential, type CredentialRow } from './rows.js';

export interface CredentialSpec {
  source: string;
  /** null with passwordHash: no Basic credential, the signature alone */
  username: string | null;
  passwordHash: string | null;
  /** absent or null: Basic only */
  verification?: SignatureVerification | null;
  eventIdRule: ExtractionRule | null;
  eventTypeRule: ExtractionRule | null;
  /** absent: Raw */
  format?: InboundFormat;
  resourceName: string | null;
  /** seconds; null or absent = the global age, 0 = forever (spec.retention) */
  retentionMaxAgeSeconds?: number | null;
  retentionPayloadMaxAgeSeconds?: number | null;
  /** the namespace of the resource that writes the row; null or absent: none (written by hand) */
  namespace?: string | null;
  /** spec.allowedEndpoints; null or absent: the spec says nothing (the default applies) */
  allowedEndpoints?: AllowedEndpoints | null;
}

export function createCredentialRepository(db: Db) {
  return {
    async findBySource(source: string): Promise<InboundCredential | undefined> {
      const row = await db<CredentialRow>('webhook_inbound_credential').where({ source }).first();
      return row ? toCredential(row) : undefined;
    },

    /** The highest bcrypt cost among the stored hashes (null: none), for the verifier's dummy comparison. */
    async maxHashCost(): Promise<number | null> {
      // no '?' in the pattern: knex would read it as a binding placeholder
      const row = (await db('webhook_inbound_credential')
        .max({ cost: db.raw(String.raw`substring(password_hash from '^\$2[abxy]{0,1}\$([0-9]{2})\$')::int`) })
        .first()) as { cost: number | null } | undefined;
      return row?.cost ?? null;
    },

    async list(): Promise<InboundCredential[]> {
      const rows = await db<CredentialRow>('webhook_inbound_credential').orderBy('created_at', 'desc');
      return rows.map(toCredential);
    },

    /**
     * Create or update the credential owned by a resource. A source already owned by another
     * resource is a conflict the caller reports (unique violation, code 23505).
     */
    async upsertByResourceUid(resourceUid: string, spec: CredentialSpec): Promise<InboundCredential> {
      const values = {
        source: spec.source,
        username: spec.username,
        password_hash: spec.passwordHash,
        verification: spec.verification ? JSON.stringify(spec.verification) : null,
        event_id_rule: spec.eventIdRule === null ? null : JSON.stringify(spec.eventIdRule),
        event_type_rule: spec.eventTypeRule === null ? null : JSON.stringify(spec.eventTypeRule),
        format: spec.format ?? 'Raw',
        resource_name: spec.resourceName,
        retention_max_age_seconds: spec.retentionMaxAgeSeconds ?? null,
        retention_payload_max_age_seconds: spec.retentionPayloadMaxAgeSeconds ?? null,
        namespace: spec.namespace ?? null,
        allowed_endpoints: spec.allowedEndpoints ? JSON.stringify(spec.allowedEndpoints) : null,
      };
      const rows: unknown[] = await db('webhook_inbound_credential')
        .insert({ ...values, resource_uid: resourceUid })
        .onConflict('resource_uid')
        .merge({ ...values, updated_at: db.fn.now() })
        .returning('*');
      const row = rows[0];
      if (!row) throw new Error('upsert returned no row');
      return toCredential(row as CredentialRow);
    },

    async deleteByResourceUid(resourceUid: string): Promise<boolean> {
      const n = await db('webhook_inbound_credential').where({ resource_uid: resourceUid }).delete();
      return n > 0;
    },

    async resourceUids(prefix: string): Promise<string[]> {
      const rows = await db<CredentialRow>('webhook_inbound_credential').select('resource_uid').where('resource_uid', 'like', `${prefix}%`);
      return rows.map((r) => r.resource_uid).filter((u): u is string => u !== null);
    },
  };
}

export type CredentialRepository = ReturnType<typeof createCredentialRepository>;
