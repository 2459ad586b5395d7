import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Value } from 'typebox/value';
import { parseAllDocuments } from 'yaml';
import {
  API_GROUP,
  API_VERSION,
  InboundCredentialSpec,
  WebhookEndpointSpec,
  replayRuleProblem,
  WebhookReplaySpec,
  type InboundCredentialResource,
  type WebhookEndpointResource,
  type WebhookReplayResource,
} from '../custom-resources/specs.js';
import { credentialSpecProblem, specProblem } from '../custom-resources/validate.js';
import { defaultNamespaceLabels } from '../custom-resources/allowed-endpoints.js';

export interface ManifestSet {
  endpoints: WebhookEndpointResource[];
  credentials: InboundCredentialResource[];
  /** applied once each (manifests/drive-replays.ts) */
  replays: WebhookReplayResource[];
  /** "namespace/name" -> decoded key/value pairs */
  secrets: Map<string, Record<string, string>>;
  /** ConfigMaps (an endpoint's CA bundle): "namespace/name" -> key/value pairs, binaryData decoded */
  configMaps: Map<string, Record<string, string>>;
  /** `kind: Namespace` documents: name -> labels (with kubernetes.io/metadata.name, as the API server sets it) */
  namespaces: Map<string, Record<string, string>>;
  /** one line per rejected document: file, index, reason */
  errors: string[];
  /** where each resource was read: "file#document" */
  origins: Map<WebhookEndpointResource | InboundCredentialResource, string>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads every .yaml/.yml/.json file of a folder the way kubectl would: multi-document files,
 * empty documents skipped, Secrets with base64 `data` or plain `stringData`, ConfigMaps (CA
 * bundles), Namespaces for their
 * labels (what an InboundCredential's allowedEndpoints selector reads). Unknown kinds are
 * ignored; invalid documents are reported and left out (the rest still loads).
 */
export async function readManifests(dir: string): Promise<ManifestSet> {
  const files = (await readdir(dir, { recursive: true })).filter((f) => MANIFEST_FILE.test(f)).sort();
  return readFiles(files.map((file) => ({ file, full: path.join(dir, file) })));
}

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/**
 * readManifests over files and folders as `kubectl apply -f` takes them (`validate -f`): a file
 * is read whatever its name, a folder for its .yaml/.yml/.json files; each named as given.
 */
export async function readManifestPaths(paths: readonly string[]): Promise<ManifestSet> {
  const files: Array<{ file: string; full: string }> = [];
  for (const p of paths) {
    if ((await stat(p)).isDirectory()) {
      const inside = (await readdir(p, { recursive: true })).filter((f) => MANIFEST_FILE.test(f)).sort();
      for (const f of inside) files.push({ file: path.join(p, f), full: path.join(p, f) });
    } else {
      files.push({ file: p, full: p });
    }
  }
  return readFiles(files);
}

async function readFiles(files: ReadonlyArray<{ file: string; full: string }>): Promise<ManifestSet> {
  const set: ManifestSet = {
    endpoints: [],
    credentials: [],
    replays: [],
    secrets: new Map(),
    configMaps: new Map(),
    namespaces: new Map(),
    errors: [],
    origins: new Map(),
  };
  for (const { file, full } of files) {
    const text = await readFile(full, 'utf8');
    const docs = parseAllDocuments(text);
    const list = Array.isArray(docs) ? docs : [docs];
    list.forEach((doc, i) => {
      const where = `${file}#${i + 1}`;
      if (doc.errors.length > 0) {
        set.errors.push(`${where}: YAML error: ${doc.errors[0]?.message.split('\n')[0] ?? 'unparsable'}`);
        return;
      }
      const obj: unknown = doc.toJS();
      if (obj === null || obj === undefined) return;
      if (!isRecord(obj) || !isRecord(obj.metadata) || typeof obj.metadata.name !== 'string') {
        set.errors.push(`${where}: not a Kubernetes object (kind and metadata.name required)`);
        return;
      }
      const metadata = {
        name: obj.metadata.name,
        namespace: typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : 'default',
        ...(isRecord(obj.metadata.annotations) ? { annotations: stringValues(obj.metadata.annotations) } : {}),
      };
      const kind = obj.kind;
      if (kind === 'Namespace') {
        // cluster-scoped: its name is what the resources' metadata.namespace names
        const labels = isRecord(obj.metadata.labels) ? stringValues(obj.metadata.labels) : {};
        set.namespaces.set(metadata.name, { ...labels, ...defaultNamespaceLabels(metadata.name) });
        return;
      }
      if (kind === 'Secret') {
        const values: Record<string, string> = {};
        if (isRecord(obj.data))
          for (const [k, v] of Object.entries(obj.data)) values[k] = Buffer.from(String(v), 'base64').toString('utf8');
        if (isRecord(obj.stringData)) for (const [k, v] of Object.entries(obj.stringData)) values[k] = String(v);
        set.secrets.set(`${metadata.namespace}/${metadata.name}`, values);
        return;
      }
      if (kind === 'ConfigMap') {
        const values: Record<string, string> = {};
        if (isRecord(obj.binaryData))
          for (const [k, v] of Object.entries(obj.binaryData)) values[k] = Buffer.from(String(v), 'base64').toString('utf8');
        if (isRecord(obj.data)) for (const [k, v] of Object.entries(obj.data)) values[k] = String(v);
        set.configMaps.set(`${metadata.namespace}/${metadata.name}`, values);
        return;
      }
      if (kind !== 'WebhookEndpoint' && kind !== 'InboundCredential' && kind !== 'WebhookReplay') return;
      if (obj.apiVersion !== `${API_GROUP}/${API_VERSION}`) {
        set.errors.push(`${where}: ${kind} ${metadata.name}: apiVersion must be ${API_GROUP}/${API_VERSION}`);
        return;
      }
      if (kind === 'WebhookReplay') {
        const spec = Value.Default(WebhookReplaySpec, structuredClone(obj.spec ?? {}));
        const problem = specProblem(WebhookReplaySpec, spec) ?? replayRuleProblem(spec as WebhookReplaySpec);
        if (problem) set.errors.push(`${where}: ${kind} ${metadata.namespace}/${metadata.name}: ${problem}`);
        else set.replays.push({ apiVersion: obj.apiVersion, kind, metadata, spec: spec as WebhookReplaySpec });
        return;
      }
      const schema = kind === 'WebhookEndpoint' ? WebhookEndpointSpec : InboundCredentialSpec;
      const spec = Value.Default(schema, structuredClone(obj.spec ?? {}));
      const problem = kind === 'WebhookEndpoint' ? specProblem(schema, spec) : credentialSpecProblem(spec);
      if (problem) {
        set.errors.push(`${where}: ${kind} ${metadata.namespace}/${metadata.name}: ${problem}`);
        return;
      }
      if (kind === 'WebhookEndpoint') {
        const r: WebhookEndpointResource = { apiVersion: obj.apiVersion, kind, metadata, spec: spec as WebhookEndpointSpec };
        set.endpoints.push(r);
        set.origins.set(r, where);
      } else {
        const r: InboundCredentialResource = { apiVersion: obj.apiVersion, kind, metadata, spec: spec as InboundCredentialSpec };
        set.credentials.push(r);
        set.origins.set(r, where);
      }
    });
  }
  return set;
}

/** Annotations as the API server keeps them: string values only (others are dropped). */
function stringValues(r: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
