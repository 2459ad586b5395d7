import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Value } from 'typebox/value';
import { parseAllDocuments } from 'yaml';
import {
  API_GROUP,
  API_VERSION,
  InboundCredentialSpec,
  WebhookEndpointSpec,
  WebhookReplaySpec,
  type InboundCredentialResource,
  type WebhookEndpointResource,
  type WebhookReplayResource,
} from '../custom-resources/specs.js';
import { credentialSpecProblem, specProblem } from '../custom-resources/validate.js';

export interface ManifestSet {
  endpoints: WebhookEndpointResource[];
  credentials: InboundCredentialResource[];
  /** applied once each (manifests/drive-replays.ts) */
  replays: WebhookReplayResource[];
  /** "namespace/name" -> decoded key/value pairs */
  secrets: Map<string, Record<string, string>>;
  /** one line per rejected document: file, index, reason */
  errors: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads every .yaml/.yml/.json file of a folder the way kubectl would: multi-document files,
 * empty documents skipped, Secrets with base64 `data` or plain `stringData`. Unknown kinds are
 * ignored; invalid documents are reported and left out (the rest still loads).
 */
export async function readManifests(dir: string): Promise<ManifestSet> {
  const set: ManifestSet = { endpoints: [], credentials: [], replays: [], secrets: new Map(), errors: [] };
  const files = (await readdir(dir, { recursive: true })).filter((f) => /\.(ya?ml|json)$/i.test(f)).sort();
  for (const file of files) {
    const text = await readFile(path.join(dir, file), 'utf8');
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
      if (kind === 'Secret') {
        const values: Record<string, string> = {};
        if (isRecord(obj.data))
          for (const [k, v] of Object.entries(obj.data)) values[k] = Buffer.from(String(v), 'base64').toString('utf8');
        if (isRecord(obj.stringData)) for (const [k, v] of Object.entries(obj.stringData)) values[k] = String(v);
        set.secrets.set(`${metadata.namespace}/${metadata.name}`, values);
        return;
      }
      if (kind !== 'WebhookEndpoint' && kind !== 'InboundCredential' && kind !== 'WebhookReplay') return;
      if (obj.apiVersion !== `${API_GROUP}/${API_VERSION}`) {
        set.errors.push(`${where}: ${kind} ${metadata.name}: apiVersion must be ${API_GROUP}/${API_VERSION}`);
        return;
      }
      if (kind === 'WebhookReplay') {
        const spec = Value.Default(WebhookReplaySpec, structuredClone(obj.spec ?? {}));
        const problem = specProblem(WebhookReplaySpec, spec) ?? replayWindowProblem(spec as WebhookReplaySpec);
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
        set.endpoints.push({ apiVersion: obj.apiVersion, kind, metadata, spec: spec as WebhookEndpointSpec });
      } else {
        set.credentials.push({ apiVersion: obj.apiVersion, kind, metadata, spec: spec as InboundCredentialSpec });
      }
    });
  }
  return set;
}

/** What the CRD's CEL rule on spec.window says, checked here (dev mode runs no CEL). */
function replayWindowProblem(spec: WebhookReplaySpec): string | undefined {
  return Date.parse(spec.window.from) < Date.parse(spec.window.to) ? undefined : 'spec.window.to: window.from must be before window.to';
}

/** Annotations as the API server keeps them: string values only (others are dropped). */
function stringValues(r: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
