import { randomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { API_GROUP, API_VERSION } from '../../../src/custom-resources/specs.js';
import { BCRYPT_ROUNDS } from '../../../src/custom-resources/to-rows.js';
import type { Db } from '../../../src/db/knex.js';
import { MANIFEST_UID_PREFIX } from '../../../src/domain/records.js';
import { basic, http } from '../../support/http.js';
import { eventually } from '../../support/wait.js';
import type { DevConsole } from './dev-console.js';

/**
 * A test's own data in a running dev mode: a source (its InboundCredential) and its endpoints,
 * written as one more file into dev mode's folder of manifests, which it reloads live. Each in a
 * namespace of its own, named after the test, so no other test's events, deliveries or endpoints
 * show in what the test reads.
 */
export interface OwnSource {
  namespace: string;
  /** the source's name (also its Basic user name) */
  source: string;
  /** an endpoint's name as the console shows it: namespace/name */
  endpoint(name: string): string;
  /** POSTs a webhook to the source as its sender would: the event's id */
  send(body: unknown, headers?: Record<string, string>): Promise<string>;
  /** the deliveries to its endpoints, oldest first, with each endpoint's short name */
  deliveries(): Promise<Array<{ id: string; eventId: string; endpoint: string; status: string }>>;
  /** whether an endpoint is disabled (spec.autoDisable) */
  disabled(name: string): Promise<boolean>;
}

/** A WebhookEndpoint's spec without its source (the own source's). */
export type EndpointSpec = { url: string } & Record<string, unknown>;

const PASSWORD = 'own-source-pass';
/**
 * The Secret holds the password's bcrypt hash, which an InboundCredential takes as it is: dev mode's
 * reload of the folder, which every test's file triggers, then hashes and compares nothing.
 */
let passwordHash: Promise<string> | undefined;

export async function addSource(
  ctx: { dev: DevConsole; db: Db },
  name: string,
  endpoints: Record<string, EndpointSpec> = {},
  opts: {
    namespace?: string;
    /** more Secrets in its namespace (an endpoint's secretRefs): name -> stringData */ secrets?: Record<string, Record<string, string>>;
  } = {},
): Promise<OwnSource> {
  const source = `${name}-${randomBytes(3).toString('hex')}`;
  const namespace = opts.namespace ?? source;
  // JSON is YAML: one document per object
  const doc = (kind: string, metadata: object, body: object) =>
    JSON.stringify({ apiVersion: kind === 'Secret' ? 'v1' : `${API_GROUP}/${API_VERSION}`, kind, metadata, ...body });
  const secret = `${source}-password`;
  const text = [
    doc('Secret', { name: secret, namespace }, { stringData: { password: await (passwordHash ??= bcrypt.hash(PASSWORD, BCRYPT_ROUNDS)) } }),
    doc(
      'InboundCredential',
      { name: source, namespace },
      { spec: { source, username: source, passwordSecretRef: { name: secret, key: 'password' } } },
    ),
    ...Object.entries(opts.secrets ?? {}).map(([n, stringData]) => doc('Secret', { name: n, namespace }, { stringData })),
    ...Object.entries(endpoints).map(([n, spec]) => doc('WebhookEndpoint', { name: n, namespace }, { spec: { source, ...spec } })),
  ].join('\n---\n');
  // written whole, then moved in: dev mode never reads half a file
  const file = path.join(ctx.dev.configDir, `${source}.yaml`);
  await writeFile(`${file}.part`, text);
  await rename(`${file}.part`, file);

  const { db } = ctx;
  // the uid dev mode gives a manifest's resource (manifests/sync-manifests.ts)
  const uidOf = (n: string) => `${MANIFEST_UID_PREFIX}WebhookEndpoint/${namespace}/${n}`;
  const uids = Object.keys(endpoints).map(uidOf);
  await eventually(
    async () => {
      const credential = await db('webhook_inbound_credential').where({ source }).first();
      const rows =
        uids.length === 0
          ? []
          : await db('webhook_endpoint').whereIn('resource_uid', uids).where({ active: true }).whereNull('denied_reason');
      return credential !== undefined && rows.length === uids.length;
    },
    { timeoutMs: 30_000, what: `dev mode to load ${source}'s credential and ${uids.length} endpoint(s)` },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${ctx.dev.output().slice(-3000)}`, { cause: err });
  });

  return {
    namespace,
    source,
    endpoint: (n) => `${namespace}/${n}`,
    send: (body, headers = {}) =>
      http(`${ctx.dev.url}/api/webhooks/${source}`, {
        headers: { authorization: basic(source, PASSWORD), 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }).then((r) => {
        if (r.status !== 200) throw new Error(`POST /api/webhooks/${source}: ${r.status} ${r.text}`);
        return (r.json() as { eventId: string }).eventId;
      }),
    deliveries: async () => {
      const rows = (await db('webhook_delivery as d')
        .join('webhook_endpoint as e', 'e.id', 'd.endpoint_id')
        .whereIn('e.resource_uid', uids)
        .orderBy('d.created_at')
        .select('d.id', 'd.event_id', 'd.status', 'e.name')) as Array<{ id: string; event_id: string; status: string; name: string }>;
      return rows.map((r) => ({ id: r.id, eventId: r.event_id, status: r.status, endpoint: r.name.slice(namespace.length + 1) }));
    },
    disabled: async (n) => {
      const row = (await db('webhook_endpoint')
        .where({ resource_uid: uidOf(n) })
        .first()) as { disabled_at: Date | null } | undefined;
      return (row?.disabled_at ?? null) !== null;
    },
  };
}
