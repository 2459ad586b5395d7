import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT, TOOLS_DIR, run, toolPath } from './chart.js';

/**
 * kubeconform, offline and strict:
 * - Kubernetes schemas from the PyPI package kubernetes-validate (kubernetes-json-schema/
 *   v<version>-local-strict). Those files carry an https://kubernetes.io/... "$id" and reference
 *   "/api/_definitions.json", which kubeconform would try to fetch over HTTP (and then report
 *   "could not find schema"); prepareKubernetesSchemas() writes a copy without "$id" whose
 *   references point at the _definitions.json beside them.
 * - Custom resources: their CRDs converted to JSON schemas here (crdToJsonSchemas), the way
 *   kubeconform's openapi2jsonschema.py does, strict (no unknown fields where the CRD lists
 *   properties).
 * No -ignore-missing-schemas: an object without a schema is an error.
 */

const KV_DIR = path.join(TOOLS_DIR, 'kubernetes-validate/kubernetes_validate/kubernetes-json-schema');
const OUT_DIR = path.join(TOOLS_DIR, 'kubeconform-schemas');
/** bump when the layout written by prepareKubernetesSchemas changes */
const K8S_SUBDIR = 'k8s-standalone-1';

/** Kubernetes versions the schemas of which are available (e.g. "1.34.0"). */
export async function availableKubernetesVersions(): Promise<string[]> {
  if (!existsSync(KV_DIR)) {
    throw new Error(
      `the offline Kubernetes JSON schemas are not installed at ${KV_DIR}: run \`bash scripts/tools/install.sh\` (PyPI kubernetes-validate)`,
    );
  }
  return (await readdir(KV_DIR))
    .map((d) => /^v(\d+\.\d+\.\d+)-local-strict$/.exec(d)?.[1])
    .filter((v): v is string => v !== undefined)
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const DEFS_REF = '/api/_definitions.json#/$defs/';

/** Rewrites "/api/_definitions.json#/$defs/X" to "#/$defs/X", drops "$id", and records every X used. */
function localize(node: Json, used: Set<string>): Json {
  if (Array.isArray(node)) return node.map((n) => localize(n, used));
  if (node === null || typeof node !== 'object') return node;
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$id') continue;
    if (k === '$ref' && typeof v === 'string' && (v.startsWith(DEFS_REF) || v.startsWith('#/$defs/'))) {
      const name = v.startsWith(DEFS_REF) ? v.slice(DEFS_REF.length) : v.slice('#/$defs/'.length);
      used.add(name);
      out[k] = `#/$defs/${name}`;
    } else {
      out[k] = localize(v, used);
    }
  }
  return out;
}

/**
 * The kubeconform-ready copy of one version's strict schemas, built once (stamped) and reused:
 * every kind's schema made standalone, with the definitions it needs (transitively) inlined.
 * Compiling one small schema per kind is much faster than the shared 2 MB _definitions.json.
 */
export async function prepareKubernetesSchemas(version: string): Promise<string> {
  const name = `v${version}-local-strict`;
  const target = path.join(OUT_DIR, K8S_SUBDIR, name);
  const src = path.join(KV_DIR, name);
  const stamp = path.join(target, '.complete');
  if (existsSync(stamp)) return path.join(OUT_DIR, K8S_SUBDIR);
  if (!existsSync(src)) throw new Error(`no offline schemas for Kubernetes ${version} in ${KV_DIR}`);
  await mkdir(path.join(OUT_DIR, K8S_SUBDIR), { recursive: true });
  const defs = (JSON.parse(await readFile(path.join(src, '_definitions.json'), 'utf8')) as { $defs: Record<string, Json> }).$defs;
  // build beside and rename: concurrent test files never see a half-written folder
  const tmp = await mkdtemp(path.join(OUT_DIR, K8S_SUBDIR, `.${name}-`));
  for (const file of await readdir(src)) {
    if (!file.endsWith('.json') || file === '_definitions.json' || file === 'all.json') continue;
    const used = new Set<string>();
    const schema = localize(JSON.parse(await readFile(path.join(src, file), 'utf8')) as Json, used) as { [k: string]: Json };
    const inlined: Record<string, Json> = {};
    const queue = [...used];
    while (queue.length > 0) {
      const def = queue.pop()!;
      if (def in inlined) continue;
      const body = defs[def];
      if (body === undefined) throw new Error(`${file}: definition ${def} not found in _definitions.json`);
      const more = new Set<string>();
      inlined[def] = localize(body, more);
      for (const m of more) if (!(m in inlined)) queue.push(m);
    }
    if (Object.keys(inlined).length > 0) schema.$defs = inlined;
    await writeFile(path.join(tmp, file), JSON.stringify(schema));
  }
  await writeFile(path.join(tmp, '.complete'), '');
  await rename(tmp, target).catch(async (err: NodeJS.ErrnoException) => {
    // another file won the race: theirs is complete, drop ours
    if (existsSync(stamp)) await rm(tmp, { recursive: true, force: true });
    else throw err;
  });
  return path.join(OUT_DIR, K8S_SUBDIR);
}

/* ---- CRD -> JSON schema ---------------------------------------------------------------------- */

interface Crd {
  kind: string;
  spec: {
    group: string;
    names: { kind: string };
    versions: { name: string; schema?: { openAPIV3Schema: Json } }[];
  };
}

function toJsonSchema(node: Json, strict: boolean): Json {
  if (Array.isArray(node)) return node.map((n) => toJsonSchema(n, strict));
  if (node === null || typeof node !== 'object') return node;
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(node)) {
    // keyword maps: convert the schemas inside, never treat their keys as keywords
    if ((k === 'properties' || k === 'patternProperties' || k === 'definitions') && v && typeof v === 'object' && !Array.isArray(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, toJsonSchema(s, strict)]));
    } else {
      out[k] = toJsonSchema(v, strict);
    }
  }
  if (out['x-kubernetes-int-or-string'] === true) {
    delete out.type;
    delete out.format;
    out.oneOf = [{ type: 'string' }, { type: 'integer' }];
  }
  if (out.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  delete out.nullable;
  if (
    strict &&
    out.properties !== undefined &&
    out.additionalProperties === undefined &&
    out['x-kubernetes-preserve-unknown-fields'] !== true
  ) {
    out.additionalProperties = false;
  }
  return out;
}

/**
 * Writes "<dir>/<group>/<kind>_<version>.json" for every version of the CRDs in the given files
 * (kubeconform's template: {{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json).
 */
export async function crdToJsonSchemas(crdFiles: string[], dir: string, strict = true): Promise<string[]> {
  const written: string[] = [];
  for (const file of crdFiles) {
    for (const doc of parseAllDocuments(await readFile(file, 'utf8'))) {
      const crd = doc.toJS() as Crd | null;
      if (!crd || crd.kind !== 'CustomResourceDefinition') continue;
      for (const v of crd.spec.versions) {
        if (!v.schema) continue;
        const schema = toJsonSchema(v.schema.openAPIV3Schema, strict) as { [k: string]: Json };
        const props = (schema.properties ?? {}) as { [k: string]: Json };
        props.apiVersion = { type: 'string', enum: [`${crd.spec.group}/${v.name}`] };
        props.kind = { type: 'string', enum: [crd.spec.names.kind] };
        schema.properties = props;
        schema.required = [...new Set([...((schema.required as string[] | undefined) ?? []), 'apiVersion', 'kind'])];
        const target = path.join(dir, crd.spec.group, `${crd.spec.names.kind.toLowerCase()}_${v.name}.json`);
        await mkdir(path.dirname(target), { recursive: true });
        await writeFile(target, JSON.stringify({ $schema: 'http://json-schema.org/draft-04/schema#', ...schema }, null, 1));
        written.push(target);
      }
    }
  }
  return written;
}

/** The CRDs the rendered chart may contain: the project's and prometheus-operator's ServiceMonitor and PrometheusRule. */
export function crdFiles(): string[] {
  const files = ['crds/webhookfanout.io_inboundcredentials.yaml', 'crds/webhookfanout.io_webhookendpoints.yaml'].map((f) =>
    path.join(REPO_ROOT, f),
  );
  const operatorCrds = ['servicemonitors', 'prometheusrules'].map((k) => path.join(TOOLS_DIR, `crds/monitoring.coreos.com_${k}.yaml`));
  for (const crd of operatorCrds) {
    if (!existsSync(crd)) {
      throw new Error(
        `the prometheus-operator CRD is not installed at ${crd}: run \`bash scripts/tools/install.sh\` (Go module github.com/prometheus-operator/prometheus-operator)`,
      );
    }
  }
  return [...files, ...operatorCrds];
}

export interface KubeconformResource {
  filename: string;
  kind: string;
  name: string;
  version: string;
  status: 'statusValid' | 'statusInvalid' | 'statusError' | 'statusSkipped' | 'statusEmpty';
  msg: string;
}

export interface KubeconformReport {
  resources: KubeconformResource[];
  summary: { valid: number; invalid: number; errors: number; skipped: number };
  exitCode: number;
  stderr: string;
}

/** Schemas install.sh fetched for other files with apiVersion/kind (skaffold.yaml). */
export function toolSchemaDir(): string {
  const dir = path.join(TOOLS_DIR, 'schemas');
  if (!existsSync(path.join(dir, 'skaffold'))) {
    throw new Error(
      `the skaffold.yaml schema is not installed in ${dir}: run \`bash scripts/tools/install.sh\` (Go module github.com/GoogleContainerTools/skaffold/v2)`,
    );
  }
  return dir;
}

/** Validates manifests (YAML text) with kubeconform -strict against one Kubernetes version. */
export async function kubeconform(manifests: string, kubernetesVersion: string, crdSchemaDir: string): Promise<KubeconformReport> {
  const k8sDir = await prepareKubernetesSchemas(kubernetesVersion);
  const r = await run(
    toolPath('kubeconform'),
    [
      '-strict',
      '-summary',
      '-verbose',
      '-output',
      'json',
      '-kubernetes-version',
      kubernetesVersion,
      '-schema-location',
      `${k8sDir}/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
      '-schema-location',
      `${crdSchemaDir}/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`,
      '-schema-location',
      `${toolSchemaDir()}/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`,
      '-',
    ],
    { input: manifests },
  );
  let parsed: { resources?: KubeconformResource[]; summary: KubeconformReport['summary'] };
  try {
    parsed = JSON.parse(r.stdout) as typeof parsed;
  } catch {
    throw new Error(`kubeconform gave no JSON report (exit ${r.code}): ${r.stderr}${r.stdout}`);
  }
  return { resources: parsed.resources ?? [], summary: parsed.summary, exitCode: r.code, stderr: r.stderr };
}

/** A temporary folder of JSON schemas for the CRDs (the project's may change between runs). */
export async function crdSchemaDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'crd-schemas-'));
  await crdToJsonSchemas(crdFiles(), dir);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
