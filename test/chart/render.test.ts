import { lstat, readFile, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  loadConsumerConfig,
  loadIngestConfig,
  loadMigrateConfig,
  loadOperatorConfig,
  loadTransportSetupConfig,
  loadWorkerConfig,
} from '../../src/config/config.js';
import { ConfigError, type Env } from '../../src/config/env-reader.js';
import {
  CHART_DIR,
  NAMESPACE,
  REPO_ROOT,
  VALUE_SETS,
  allContainers,
  deploymentSpec,
  find,
  helmTemplateError,
  helmTemplate,
  one,
  parseManifests,
  podSpecs,
  render,
  run,
  toolPath,
  type Container,
  type K8sObject,
} from './support/chart.js';
import { RBAC_DIR, renderDeployRbacFiles } from '../../scripts/kube/gen-rbac.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('chart-tools');

/**
 * What a platform engineer checks in a chart before installing it: helm lint --strict, and the
 * rendered manifests of every value set (defaults, minimal, full, the examples) for inline
 * secrets, the restricted security context, probes, hooks, RBAC and configuration that the
 * processes actually read.
 */

const rendered: Record<string, K8sObject[]> = {};

beforeAll(async () => {
  for (const [name, values] of Object.entries(VALUE_SETS)) rendered[name] = await render({ values });
});

const each = Object.keys(VALUE_SETS);

/** What each process reads from its environment: its config loader run against a recording env. */
const LOADERS: Record<string, (env: Env) => unknown> = {
  ingest: loadIngestConfig,
  consumer: loadConsumerConfig,
  worker: loadWorkerConfig,
  operator: loadOperatorConfig,
  migrate: loadMigrateConfig,
  'setup-transport': loadTransportSetupConfig,
};
/** read by the AWS SDK's credential chain, not by the config loader */
const SDK_ENV = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']);
/** read by Node itself, not by the CLI's configuration: the chart sets V8 heap limits through it */
const RUNTIME_ENV = new Set(['NODE_OPTIONS']);
/** the full values' extraEnv: the user's own variables */
const USER_EXTRA_ENV = new Set(['NODE_EXTRA_CA_CERTS', 'SENTRY_DSN']);

/** The variables `command`'s loader reads given `given` (a switch such as WORKER_CONSUME_QUEUE decides what else it reads). */
function namesRead(command: string, given: Env = {}): Set<string> {
  const seen = new Set<string>();
  const env = new Proxy({} as Env, {
    get(_t, key) {
      if (typeof key !== 'string') return undefined;
      seen.add(key);
      return given[key];
    },
  });
  try {
    LOADERS[command]!(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
  }
  return seen;
}

/** The container's env as the process would see it: secrets and downward API replaced by plausible values. */
function effectiveEnv(c: Container, namespace: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.value !== undefined) out[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef)
      out[e.name] = e.name === 'DATABASE_URL' ? 'postgres://user:secret@postgres:5432/webhooks' : 'from-a-secret';
    else if (e.valueFrom?.fieldRef) out[e.name] = e.valueFrom.fieldRef.fieldPath === 'metadata.namespace' ? namespace : 'pod-0';
  }
  return out;
}

const commandOf = (c: Container): string | undefined => c.args?.[0];

/** The image's ENTRYPOINT, as the Dockerfile says: ["node", "/app/dist/cmd/cli.js"]. */
async function imageEntrypoint(): Promise<string[]> {
  const dockerfile = await readFile(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const m = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
  if (!m?.[1]) throw new Error('the Dockerfile has no ENTRYPOINT in exec form');
  return JSON.parse(m[1]) as string[];
}
const ENTRYPOINT = await imageEntrypoint();

/**
 * The node flags a container runs the CLI with: [] for the image's entrypoint as it is, the flags
 * for the entrypoint with node's flags first (<component>.nodeFlags); undefined when it runs
 * something else (the helm test's script).
 */
function nodeFlagsOf(c: Container): string[] | undefined {
  if (c.command === undefined) return [];
  const [node, ...rest] = c.command;
  const script = rest.pop();
  return node === ENTRYPOINT[0] && script === ENTRYPOINT.at(-1) && rest.every((f) => f.startsWith('--')) ? rest : undefined;
}
const appContainers = (objs: K8sObject[]) =>
  podSpecs(objs).flatMap((p) =>
    p.spec.containers.filter((c) => commandOf(c) !== undefined && nodeFlagsOf(c) !== undefined).map((c) => ({ owner: p, c })),
  );

describe('helm lint --strict', () => {
  it.each(each)('passes with %s values', async (name) => {
    const r = await run(toolPath('helm'), [
      'lint',
      '--strict',
      CHART_DIR,
      ...VALUE_SETS[name]!.flatMap((f) => ['-f', path.join(CHART_DIR, f)]),
    ]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('0 chart(s) failed');
  });

  it('keeps names within 63 characters with a long release name', async () => {
    const release = 'a-release-name-of-fifty-three-characters-for-testing';
    const objs = await render({ release, values: VALUE_SETS.full });
    for (const o of await render({ release })) objs.push(o);
    for (const o of objs) expect(o.metadata.name.length, o.metadata.name).toBeLessThanOrEqual(63);
    for (const o of objs) for (const v of Object.values(o.metadata.labels ?? {})) expect(String(v).length).toBeLessThanOrEqual(63);
  });
});

describe('the chart CRDs', () => {
  it('exist once: the repository crds/ is a symlink to the chart crds/ that scripts/kube/gen-crds.ts writes', async () => {
    expect((await lstat(path.join(REPO_ROOT, 'crds'))).isSymbolicLink()).toBe(true);
    expect(await realpath(path.join(REPO_ROOT, 'crds'))).toBe(await realpath(path.join(CHART_DIR, 'crds')));
    expect((await readdir(path.join(CHART_DIR, 'crds'))).filter((f) => f.endsWith('.yaml')).sort()).toEqual([
      'webhookfanout.io_inboundcredentials.yaml',
      'webhookfanout.io_webhookendpoints.yaml',
      'webhookfanout.io_webhookreplays.yaml',
    ]);
  });

  it('are rendered only with --include-crds (helm installs crds/ once and never upgrades them)', async () => {
    expect(find(rendered.default!, 'CustomResourceDefinition')).toHaveLength(0);
    const withCrds = await render({ includeCrds: true });
    expect(
      find(withCrds, 'CustomResourceDefinition')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['inboundcredentials.webhookfanout.io', 'webhookendpoints.webhookfanout.io', 'webhookreplays.webhookfanout.io']);
  });
});

describe.each(each)('rendered with %s values', (set) => {
  const objs = () => rendered[set]!;

  it('contains no Secret and no secret value inline', () => {
    expect(find(objs(), 'Secret')).toEqual([]);
    const text = JSON.stringify(objs());
    expect(text).not.toMatch(/postgres(ql)?:\/\/[^"@/]+:[^"@/]+@/); // a URL with a password
    expect(text).not.toMatch(/-----BEGIN [A-Z ]*PRIVATE KEY-----/);
    for (const { object, spec } of podSpecs(objs())) {
      for (const c of allContainers(spec)) {
        for (const e of c.env ?? []) {
          if (/DATABASE_URL|PASSWORD|SECRET|TOKEN|ACCESS_KEY|PRIVATE|DSN|CREDENTIAL(?!_CACHE)/.test(e.name)) {
            expect(e.value, `${object.kind}/${object.metadata.name} ${c.name} env ${e.name} must come from a Secret`).toBeUndefined();
            expect(e.valueFrom?.secretKeyRef, `${object.kind}/${object.metadata.name} ${c.name} env ${e.name}`).toBeDefined();
          }
        }
      }
    }
  });

  it('runs every pod under the restricted Pod Security Standard with a read-only root filesystem', () => {
    const pods = podSpecs(objs());
    expect(pods.length).toBeGreaterThan(0);
    for (const { object, spec } of pods) {
      const where = `${object.kind}/${object.metadata.name}`;
      expect(spec.securityContext?.runAsNonRoot, where).toBe(true);
      expect(spec.securityContext?.runAsUser, where).not.toBe(0);
      expect(spec.securityContext?.seccompProfile?.type, where).toBe('RuntimeDefault');
      expect(spec.hostNetwork ?? false, where).toBe(false);
      expect(spec.hostPID ?? false, where).toBe(false);
      expect(spec.hostIPC ?? false, where).toBe(false);
      expect(spec.enableServiceLinks, `${where}: no service-link variables in the environment`).toBe(false);
      const tmp = spec.volumes?.find((v) => v.name === 'tmp');
      expect(tmp?.emptyDir, `${where}: /tmp is an emptyDir`).toBeDefined();
      for (const c of allContainers(spec)) {
        const sc = c.securityContext;
        expect(sc?.readOnlyRootFilesystem, `${where} ${c.name}`).toBe(true);
        expect(sc?.allowPrivilegeEscalation, `${where} ${c.name}`).toBe(false);
        expect(sc?.privileged ?? false, `${where} ${c.name}`).toBe(false);
        expect(sc?.capabilities?.drop, `${where} ${c.name}`).toContain('ALL');
        expect(sc?.capabilities?.add ?? [], `${where} ${c.name}`).toEqual([]);
        expect(c.volumeMounts?.find((m) => m.mountPath === '/tmp')?.name, `${where} ${c.name} mounts /tmp`).toBe('tmp');
        expect(c.resources?.requests?.cpu, `${where} ${c.name} cpu request`).toBeDefined();
        expect(c.resources?.requests?.memory, `${where} ${c.name} memory request`).toBeDefined();
        expect(c.resources?.limits?.memory, `${where} ${c.name} memory limit`).toBeDefined();
        expect(c.image, `${where} ${c.name}`).not.toMatch(/:latest$|^[^:@]+$/);
      }
    }
  });

  it('gives API access to the operator only', () => {
    for (const { object, spec, labels } of podSpecs(objs())) {
      const component = labels['app.kubernetes.io/component'];
      expect(spec.automountServiceAccountToken, `${object.kind}/${object.metadata.name}`).toBe(component === 'operator');
    }
    for (const sa of find(objs(), 'ServiceAccount')) {
      const component = sa.metadata.labels?.['app.kubernetes.io/component'];
      expect((sa as { automountServiceAccountToken?: boolean }).automountServiceAccountToken, sa.metadata.name).toBe(
        component === 'operator',
      );
    }
    // every RoleBinding / ClusterRoleBinding binds the operator's ServiceAccount and nothing else
    for (const b of [...find(objs(), 'RoleBinding'), ...find(objs(), 'ClusterRoleBinding')]) {
      const subjects = (b as unknown as { subjects: { kind: string; name: string }[] }).subjects;
      expect(subjects.map((s) => s.kind)).toEqual(['ServiceAccount']);
      expect(subjects[0]!.name).toMatch(/-operator$/);
    }
  });

  it('probes /healthz and /readyz on the management port and exposes it for /metrics', () => {
    for (const d of find(objs(), 'Deployment')) {
      const c = deploymentSpec(d).template.spec.containers[0]!;
      const port = c.ports?.find((p) => p.name === 'management');
      expect(port?.containerPort, d.metadata.name).toBe(9090);
      expect(c.startupProbe?.httpGet, d.metadata.name).toEqual({ path: '/healthz', port: 'management' });
      expect(c.livenessProbe?.httpGet, d.metadata.name).toEqual({ path: '/healthz', port: 'management' });
      expect(c.readinessProbe?.httpGet, d.metadata.name).toEqual({ path: '/readyz', port: 'management' });
      expect(effectiveEnv(c, NAMESPACE).MANAGEMENT_PORT).toBe('9090');
    }
  });

  it('runs commands the CLI has, with an environment each process reads and accepts', async () => {
    const cli = await readFile(path.join(REPO_ROOT, 'src/cmd/cli.ts'), 'utf8');
    const commands = new Set([...cli.matchAll(/^\s+'?([a-z-]+)'?: \(\) => import\(/gm)].map((m) => m[1]));
    const apps = appContainers(objs());
    expect(apps.length).toBeGreaterThan(0);
    for (const { owner, c } of apps) {
      const command = commandOf(c)!;
      const where = `${owner.object.kind}/${owner.object.metadata.name}`;
      expect(commands, `${where} runs "${command}"`).toContain(command);
      const env = effectiveEnv(c, NAMESPACE);
      const read = namesRead(command, env);
      for (const e of c.env ?? []) {
        if (SDK_ENV.has(e.name)) continue;
        if (RUNTIME_ENV.has(e.name)) continue;
        if (USER_EXTRA_ENV.has(e.name)) continue;
        // tracing.env's OTEL_* go to OpenTelemetry's SDK as they are (the config checks the ones it knows)
        if (e.name.startsWith('OTEL_') && !read.has(e.name)) continue;
        expect(read, `${where}: env ${e.name} is not read by \`webhook-fanout ${command}\``).toContain(e.name);
      }
      const problems = (() => {
        try {
          LOADERS[command]!(env);
          return [];
        } catch (err) {
          if (err instanceof ConfigError) return err.problems;
          throw err;
        }
      })();
      if (set === 'default') {
        // the defaults can not know where SNS/SQS are: only those two are missing (NOTES.txt warns)
        for (const p of problems) expect(p, where).toMatch(/^(TOPIC_ARN|QUEUE_URL) is required/);
      } else {
        expect(problems, `${where}: the rendered env is not a valid configuration`).toEqual([]);
      }
    }
  });

  it('labels every object the helm create way and selects pods by component', () => {
    for (const o of objs()) {
      const l = o.metadata.labels ?? {};
      expect(l['app.kubernetes.io/name'], `${o.kind}/${o.metadata.name}`).toBe('webhook-fanout');
      expect(l['app.kubernetes.io/instance'], `${o.kind}/${o.metadata.name}`).toBe('webhook-fanout');
      expect(l['app.kubernetes.io/managed-by'], `${o.kind}/${o.metadata.name}`).toBe('Helm');
      expect(l['helm.sh/chart'], `${o.kind}/${o.metadata.name}`).toMatch(/^webhook-fanout-\d+\.\d+\.\d+/);
    }
    for (const d of find(objs(), 'Deployment')) {
      const s = deploymentSpec(d);
      expect(Object.keys(s.selector.matchLabels).sort()).toEqual([
        'app.kubernetes.io/component',
        'app.kubernetes.io/instance',
        'app.kubernetes.io/name',
      ]);
      for (const [k, v] of Object.entries(s.selector.matchLabels)) expect(s.template.metadata.labels[k]).toBe(v);
    }
  });

  it('covers each Deployment with a PodDisruptionBudget, Service and HPA that select its pods', () => {
    const deployments = find(objs(), 'Deployment');
    const podsOf = (selector: Record<string, string>) =>
      deployments.filter((d) => Object.entries(selector).every(([k, v]) => deploymentSpec(d).template.metadata.labels[k] === v));
    for (const pdb of find(objs(), 'PodDisruptionBudget')) {
      const sel = (pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
      expect(
        podsOf(sel).map((d) => d.metadata.name),
        pdb.metadata.name,
      ).toEqual([pdb.metadata.name]);
    }
    for (const svc of find(objs(), 'Service')) {
      const sel = (svc.spec as { selector: Record<string, string> }).selector;
      expect(podsOf(sel), svc.metadata.name).toHaveLength(1);
    }
    for (const hpa of find(objs(), 'HorizontalPodAutoscaler')) {
      const target = (hpa.spec as { scaleTargetRef: { kind: string; name: string } }).scaleTargetRef;
      const d = one(objs(), 'Deployment', target.name);
      expect(deploymentSpec(d).replicas, `${d.metadata.name} leaves replicas to its HPA`).toBeUndefined();
      expect(['ingest', 'worker']).toContain(d.metadata.labels?.['app.kubernetes.io/component']);
    }
    if (!['minimal', 'example-dev'].includes(set)) {
      for (const d of deployments) expect(podsOf(deploymentSpec(d).selector.matchLabels)).toHaveLength(1);
      expect(
        find(objs(), 'PodDisruptionBudget')
          .map((p) => p.metadata.name)
          .sort(),
      ).toEqual(deployments.map((d) => d.metadata.name).sort());
    }
  });

  it('runs the migration as a pre-install/pre-upgrade hook, before anything else, with its ServiceAccount', () => {
    const jobs = find(objs(), 'Job');
    const migrate = jobs.find((j) => j.metadata.labels?.['app.kubernetes.io/component'] === 'migrate');
    if (set === 'minimal') {
      expect(migrate).toBeUndefined();
      return;
    }
    expect(migrate).toBeDefined();
    const a = migrate!.metadata.annotations ?? {};
    expect(a['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(a['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
    const spec = (migrate!.spec as { template: { spec: { serviceAccountName: string; restartPolicy: string; containers: Container[] } } })
      .template.spec;
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.containers[0]!.args).toEqual(['migrate']);
    const sa = one(objs(), 'ServiceAccount', spec.serviceAccountName);
    expect(sa.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(Number(sa.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(Number(a['helm.sh/hook-weight']));
    // every hook Job is a pre-install/pre-upgrade hook with a hook ServiceAccount
    for (const j of jobs) expect(j.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
  });

  it('has a ServiceMonitor only when enabled, selecting the metrics Services', () => {
    const monitors = find(objs(), 'ServiceMonitor');
    const enabled = ['full', 'full-worker-consumes-queue', 'example-aws'].includes(set);
    expect(monitors).toHaveLength(enabled ? 1 : 0);
    if (!enabled) return;
    const sel = (monitors[0]!.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    const selected = find(objs(), 'Service').filter((s) => Object.entries(sel).every(([k, v]) => s.metadata.labels?.[k] === v));
    const components =
      set === 'full-worker-consumes-queue' ? ['ingest', 'operator', 'worker'] : ['consumer', 'ingest', 'operator', 'worker'];
    expect(selected.map((s) => s.metadata.labels?.['app.kubernetes.io/component']).sort()).toEqual(components);
    for (const s of selected)
      expect((s.spec as { ports: { name: string; port: number }[] }).ports).toEqual([
        expect.objectContaining({ name: 'metrics', port: 9090 }),
      ]);
  });

  it('has a helm test Pod that posts a webhook to the ingest Service', () => {
    const tests = find(objs(), 'Pod');
    if (set === 'minimal') {
      expect(tests).toHaveLength(0);
      return;
    }
    expect(tests).toHaveLength(1);
    const pod = tests[0]!;
    expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
    const c = (pod.spec as { containers: Container[] }).containers[0]!;
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));
    const ingest = find(objs(), 'Service').find(
      (s) => s.metadata.labels?.['app.kubernetes.io/component'] === 'ingest' && !s.metadata.name.endsWith('-metrics'),
    )!;
    const port = (ingest.spec as { ports: { port: number }[] }).ports[0]!.port;
    expect(env.INGEST_URL?.value).toBe(`http://${ingest.metadata.name}.${NAMESPACE}.svc:${port}`);
    expect(c.args?.[0]).toContain('/api/webhooks/');
    expect(env.TEST_PASSWORD?.valueFrom?.secretKeyRef !== undefined).toBe(set.startsWith('full'));
  });
});

describe('specific values', () => {
  it('database.tls, temporal.tls and temporal.apiKey: Secrets mounted read-only where their files are named, in each process that connects', async () => {
    const objects = await render({
      set: [
        'aws.topicArn=arn:aws:sns:us-east-1:000000000000:t',
        'aws.queueUrl=http://sqs:4566/000000000000/q',
        'database.tls.existingSecret=pg-ca',
        'temporal.tls.existingSecret=temporal-mtls',
        'temporal.tls.serverName=temporal.internal',
        'temporal.apiKey.existingSecret=temporal-cloud',
      ],
    });
    const seen = new Map<string, string[]>();
    for (const { owner, c } of appContainers(objects)) {
      const command = commandOf(c)!;
      const env = effectiveEnv(c, NAMESPACE);
      const mounts = new Map((c.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
      const volumes = new Map(
        (owner.spec.volumes ?? []).map((v) => [v.name, (v as { secret?: { secretName: string } }).secret?.secretName]),
      );
      const files = Object.entries(env).filter(([name]) => /_(FILE|CA|CERT|KEY)$/.test(name) && name !== 'TEMPORAL_API_KEY');
      for (const [name, file] of files) {
        const mount = mounts.get(path.dirname(file));
        expect(mount, `${command}: ${name}=${file} is not under a mounted Secret`).toBeDefined();
        expect(volumes.get(mount!), `${command}: ${name}`).toMatch(/^(pg-ca|temporal-mtls|temporal-cloud)$/);
      }
      seen.set(command, files.map(([n]) => n).sort());
      if (env.TEMPORAL_ADDRESS !== undefined) expect(env.TEMPORAL_TLS_SERVER_NAME, command).toBe('temporal.internal');
    }
    const db = ['DATABASE_CA_FILE'];
    const temporal = ['TEMPORAL_API_KEY_FILE', 'TEMPORAL_TLS_CA', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY'];
    expect(Object.fromEntries(seen)).toEqual({
      ingest: [...db, ...temporal].sort(),
      consumer: [...db, ...temporal].sort(),
      worker: [...db, ...temporal].sort(),
      // a WebhookReplay's runs start on Temporal
      operator: [...db, ...temporal].sort(),
      migrate: db,
    });
  });

  it("delivery.proxy: the worker's DELIVERY_PROXY_* and the credentials Secret mounted read-only where their files are named; no other process", async () => {
    const objects = await render({
      set: [
        'aws.topicArn=arn:aws:sns:us-east-1:000000000000:t',
        'aws.queueUrl=http://sqs:4566/000000000000/q',
        'delivery.proxy.url=http://egress-proxy.egress.svc:3128',
        'delivery.proxy.noProxy={.svc,cluster.local,10.0.0.0/8}',
        'delivery.proxy.credentials.existingSecret=egress-proxy-credentials',
      ],
    });
    for (const { owner, c } of appContainers(objects)) {
      const command = commandOf(c)!;
      const env = effectiveEnv(c, NAMESPACE);
      const proxyEnv = Object.keys(env).filter((n) => n.startsWith('DELIVERY_PROXY') || n === 'DELIVERY_NO_PROXY');
      if (command !== 'worker') {
        expect(proxyEnv, command).toEqual([]);
        continue;
      }
      expect(env).toMatchObject({
        DELIVERY_PROXY_URL: 'http://egress-proxy.egress.svc:3128',
        DELIVERY_NO_PROXY: '.svc,cluster.local,10.0.0.0/8',
        DELIVERY_PROXY_USERNAME_FILE: '/etc/webhook-fanout/delivery-proxy/username',
        DELIVERY_PROXY_PASSWORD_FILE: '/etc/webhook-fanout/delivery-proxy/password',
      });
      const mount = (c.volumeMounts ?? []).find((m) => m.mountPath === '/etc/webhook-fanout/delivery-proxy');
      expect(mount).toMatchObject({ readOnly: true });
      const volume = (owner.spec.volumes ?? []).find((v) => v.name === mount?.name) as { secret?: { secretName: string } } | undefined;
      expect(volume?.secret?.secretName).toBe('egress-proxy-credentials');
    }
  });

  it("worker.consumeQueue: the worker reads the queue with the consumer's settings, and no consumer renders", () => {
    const objects = rendered['full-worker-consumes-queue']!;
    expect(objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'consumer')).toEqual([]);
    const worker = one(objects, 'Deployment', 'wf-worker');
    const c = deploymentSpec(worker).template.spec.containers[0]!;
    expect(c.args).toEqual(['worker']);
    const env = effectiveEnv(c, NAMESPACE);
    expect(env).toMatchObject({ WORKER_CONSUME_QUEUE: 'true', CONSUMER_CONCURRENCY: '5', QUEUE_VISIBILITY_TIMEOUT_SECONDS: '60' });
    expect(env.QUEUE_URL).toMatch(/webhook-fanout-events$/);
    // the consumer's heap settings stay the consumer's: the worker keeps its own
    expect(env.NODE_OPTIONS).toContain('--max-semi-space-size=32');
    // issue 41: at 128 MB the worker's live heap kept V8 collecting over and over (docs/benchmarks.md)
    expect(env.NODE_OPTIONS).toContain('--max-old-space-size=256');
    expect(loadWorkerConfig(env).consumeQueue).toMatchObject({ queueUrl: env.QUEUE_URL, concurrency: 5, visibilityTimeoutSeconds: 60 });
  });

  it("runs the consumer as the image's entrypoint with --optimize-for-size first (consumer.nodeFlags), flags node accepts", async () => {
    const container = (objs: K8sObject[], name: string): Container =>
      deploymentSpec(one(objs, 'Deployment', `webhook-fanout-${name}`)).template.spec.containers[0]!;
    const defaults = rendered.default!;
    const consumer = container(defaults, 'consumer');
    expect(consumer.command).toEqual([ENTRYPOINT[0], '--optimize-for-size', ...ENTRYPOINT.slice(1)]);
    expect(consumer.args).toEqual(['consumer']);
    for (const name of ['ingest', 'worker', 'operator']) expect(container(defaults, name).command, name).toBeUndefined();
    // node itself accepts them (NODE_OPTIONS refuses this one: why they are not in settings)
    const node = await run(process.execPath, [...(nodeFlagsOf(consumer) ?? []), '-e', '0']);
    expect(node.stderr).toBe('');
    expect(node.code).toBe(0);
    const optionsRefused = await run(process.execPath, ['-e', '0'], { env: { ...process.env, NODE_OPTIONS: '--optimize-for-size' } });
    expect(optionsRefused.stderr).toMatch(/--optimize-for-size is not allowed in NODE_OPTIONS/);

    const set = await render({ set: ['consumer.nodeFlags=null', 'worker.nodeFlags={--max-semi-space-size=8,--stack-trace-limit=20}'] });
    expect(container(set, 'consumer').command).toBeUndefined();
    expect(nodeFlagsOf(container(set, 'worker'))).toEqual(['--max-semi-space-size=8', '--stack-trace-limit=20']);
    expect(await helmTemplateError({ set: ['consumer.nodeFlags={optimize-for-size}'] })).toMatch(/nodeFlags/);
  });

  it('gives the operator leader election, its identity and two replicas by default', () => {
    const d = one(rendered.default!, 'Deployment', 'webhook-fanout-operator');
    expect(deploymentSpec(d).replicas).toBe(2);
    const c = deploymentSpec(d).template.spec.containers[0]!;
    expect(c.args).toEqual(['operator']);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));
    expect(env.LEADER_ELECTION?.value).toBe('true');
    expect(env.LEADER_ELECTION_LEASE_NAME?.value).toBe('webhook-fanout-operator');
    expect(env.POD_NAME?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
    expect(env.POD_NAMESPACE?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
    expect(env.WATCH_NAMESPACE).toBeUndefined();
    // the operator's ServiceAccount is the identity test/support/kube.ts gives the operator
    expect(deploymentSpec(d).template.spec.serviceAccountName).toBe('webhook-fanout-operator');
  });

  it('is the one source of the operator RBAC: deploy/rbac/ is what scripts/kube/gen-rbac.ts renders from it', async () => {
    for (const { file, text } of await renderDeployRbacFiles(toolPath('helm'))) {
      expect(await readFile(path.join(RBAC_DIR, file), 'utf8'), `deploy/rbac/${file} is stale: run npx tsx scripts/kube/gen-rbac.ts`).toBe(
        text,
      );
    }
    expect((await readdir(RBAC_DIR)).sort()).toEqual(['operator.yaml', 'user-roles.yaml']);
    // what kubectl applies is what the chart installs for this release and namespace, Helm's own labels aside
    const objs = rendered.default!;
    const applied = parseManifests(await readFile(path.join(RBAC_DIR, 'operator.yaml'), 'utf8'));
    expect(applied.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ServiceAccount/webhook-fanout-operator',
      `ClusterRole/${NAMESPACE}-webhook-fanout-operator`,
      `ClusterRoleBinding/${NAMESPACE}-webhook-fanout-operator`,
      `ClusterRole/${NAMESPACE}-webhook-fanout-operator-namespaces`,
      `ClusterRoleBinding/${NAMESPACE}-webhook-fanout-operator-namespaces`,
      'Role/webhook-fanout-operator-leader-election',
      'RoleBinding/webhook-fanout-operator-leader-election',
    ]);
    for (const o of applied) {
      const { labels, ...installed } = one(objs, o.kind, o.metadata.name).metadata;
      expect({ ...o, metadata: { ...o.metadata, labels: undefined } }).toEqual({
        ...one(objs, o.kind, o.metadata.name),
        metadata: { ...installed, labels: undefined },
      });
      expect(Object.keys(o.metadata.labels ?? {})).not.toContain('app.kubernetes.io/managed-by');
      expect(labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    }
    // test/support/kube.ts runs the operator as this ServiceAccount, bound cluster-wide
    const binding = one(applied, 'ClusterRoleBinding', `${NAMESPACE}-webhook-fanout-operator`) as unknown as { subjects: unknown[] };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'webhook-fanout-operator', namespace: NAMESPACE }]);
  });

  it('never grants wildcards, or writes to Secrets or ConfigMaps', () => {
    for (const set of each) {
      for (const r of [...find(rendered[set]!, 'ClusterRole'), ...find(rendered[set]!, 'Role')]) {
        for (const rule of (r as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }).rules) {
          expect([...rule.verbs, ...rule.resources, ...rule.apiGroups], r.metadata.name).not.toContain('*');
          if (rule.resources.includes('secrets') || rule.resources.includes('configmaps'))
            expect(rule.verbs.sort()).toEqual(['get', 'list', 'watch']);
        }
      }
    }
  });

  it('puts the release namespace into cluster-scoped names: one release name installs in two namespaces', async () => {
    const clusterScoped = (objs: Awaited<ReturnType<typeof render>>) =>
      objs.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding').map((o) => `${o.kind}/${o.metadata.name}`);
    const [a, b] = await Promise.all([render({ namespace: 'team-a' }), render({ namespace: 'team-b' })]);
    expect(clusterScoped(a)).toContain('ClusterRole/team-a-webhook-fanout-operator');
    expect(clusterScoped(a).filter((n) => clusterScoped(b).includes(n))).toEqual([]);
  });

  it('deletes the hook ServiceAccounts with their Jobs once the hooks succeeded (uninstall leaves none)', () => {
    const hookAccounts = find(rendered.default!, 'ServiceAccount').filter((o) => o.metadata.annotations?.['helm.sh/hook']);
    expect(hookAccounts.map((o) => o.metadata.name)).toContain('webhook-fanout-migrate');
    for (const sa of hookAccounts)
      expect(sa.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
  });

  it('binds the operator per namespace with operator.watchNamespaces', () => {
    const objs = rendered.full!;
    // only the Namespace reader is bound cluster-wide: a RoleBinding can not grant a cluster-scoped resource
    expect(find(objs, 'ClusterRoleBinding').map((b) => b.metadata.name)).toEqual([`${NAMESPACE}-wf-operator-namespaces`]);
    const bindings = find(objs, 'RoleBinding').filter((b) => b.metadata.name === `${NAMESPACE}-wf-operator`);
    expect(bindings.map((b) => b.metadata.namespace).sort()).toEqual(['team-a', 'team-b']);
    const env = deploymentSpec(one(objs, 'Deployment', 'wf-operator')).template.spec.containers[0]!.env!;
    expect(env.find((e) => e.name === 'WATCH_NAMESPACE')?.value).toBe('team-a,team-b');
  });

  it('exposes the ingest by an Ingress only when enabled, on the inbound path by default', async () => {
    expect(find(rendered.default!, 'Ingress')).toHaveLength(0);
    const objs = await render({ set: ['ingest.ingress.enabled=true'] });
    const ing = one(objs, 'Ingress', 'webhook-fanout-ingest') as unknown as {
      spec: { rules: { http: { paths: { path: string; backend: { service: { name: string; port: { name: string } } } }[] } }[] };
    };
    expect(ing.spec.rules[0]!.http.paths).toEqual([
      { path: '/api/webhooks', pathType: 'Prefix', backend: { service: { name: 'webhook-fanout-ingest', port: { name: 'http' } } } },
    ]);
    // the management port (metrics, probes) never sits behind the public Service
    const svc = one(objs, 'Service', 'webhook-fanout-ingest') as unknown as { spec: { ports: { targetPort: string }[] } };
    expect(svc.spec.ports.map((p) => p.targetPort)).toEqual(['http']);
  });

  it('trusts the forwarding headers of the Ingress controller by default, of no proxy without the Ingress, of ingest.trustedProxies when set', async () => {
    const trusted = async (set: string[], setJson: string[] = []) => {
      const objs = await render({ set, setJson });
      const container = deploymentSpec(one(objs, 'Deployment', 'webhook-fanout-ingest')).template.spec.containers[0]!;
      const value = container.env?.find((e) => e.name === 'INGEST_TRUSTED_PROXIES')?.value;
      // what the process makes of it
      const cfg = loadIngestConfig({ ...effectiveEnv(container, NAMESPACE), TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:t' });
      return { value, trustedProxies: cfg.trustedProxies };
    };
    // exposed directly (no Ingress): the TCP peer is the client
    expect(await trusted([])).toEqual({ value: undefined, trustedProxies: [] });
    // behind the chart's Ingress: the private ranges the controller's pods connect from
    const privateRanges = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'];
    expect(await trusted(['ingest.ingress.enabled=true'])).toEqual({ value: privateRanges.join(','), trustedProxies: privateRanges });
    // set: as given, with or without the Ingress; [] trusts none even behind it
    expect(await trusted(['ingest.trustedProxies={10.42.0.0/16}'])).toEqual({ value: '10.42.0.0/16', trustedProxies: ['10.42.0.0/16'] });
    expect(await trusted(['ingest.ingress.enabled=true', 'ingest.trustedProxies={10.42.0.0/16,fd00::/8}'])).toEqual({
      value: '10.42.0.0/16,fd00::/8',
      trustedProxies: ['10.42.0.0/16', 'fd00::/8'],
    });
    expect(await trusted(['ingest.ingress.enabled=true'], ['ingest.trustedProxies=[]'])).toEqual({ value: undefined, trustedProxies: [] });
    // not an address: refused by the values schema before anything is rendered
    expect(await helmTemplateError({ set: ['ingest.trustedProxies={ingress-nginx}'] })).toMatch(/trustedProxies/);
  });

  it('annotates ServiceAccounts for IRSA and pins the image by digest', () => {
    const objs = rendered.full!;
    expect(one(objs, 'ServiceAccount', 'wf-ingest').metadata.annotations?.['eks.amazonaws.com/role-arn']).toMatch(
      /role\/webhook-fanout-ingest$/,
    );
    expect(one(objs, 'ServiceAccount', 'wf-consumer').metadata.annotations?.['eks.amazonaws.com/role-arn']).toMatch(
      /role\/webhook-fanout-consumer$/,
    );
    for (const { spec } of podSpecs(objs)) {
      for (const c of allContainers(spec))
        expect(c.image).toMatch(/^registry\.example\.com\/platform\/webhook-fanout@sha256:[0-9a-f]{64}$/);
    }
  });

  it('refuses, by its values schema, a database URL or unknown keys in the values', async () => {
    expect(await helmTemplateError({ set: ['database.url=postgres://u:p@db/x'] })).toMatch(/additional properties 'url' not allowed/);
    expect(await helmTemplateError({ set: ['ingest.replicas=3'] })).toMatch(/additional properties 'replicas' not allowed/);
    expect(await helmTemplateError({ set: ['database.existingSecret='] })).toMatch(/existingSecret/);
  });

  it('requires the identity provider when the admin API is enabled', async () => {
    expect(await helmTemplateError({ set: ['adminApi.enabled=true'] })).toMatch(/adminApi\.auth\.url is required/);
    const objs = await render({
      set: ['adminApi.enabled=true', 'adminApi.auth.url=https://idp.example.com', 'adminApi.auth.audience=api', 'console.enabled=false'],
    });
    const env = deploymentSpec(one(objs, 'Deployment', 'webhook-fanout-ingest')).template.spec.containers[0]!.env!;
    expect(env.filter((e) => e.name.startsWith('AUTH_') || e.name === 'ADMIN_API_ENABLED')).toEqual([
      { name: 'ADMIN_API_ENABLED', value: 'true' },
      { name: 'AUTH_AUDIENCE', value: 'api' },
      { name: 'AUTH_URL', value: 'https://idp.example.com' },
    ]);
  });

  it('upgrades an installation made before the console (admin API on, no console value): console off, admin API on', async () => {
    const objs = await render({ values: VALUE_SETS['admin-api-before-console'] });
    const container = deploymentSpec(one(objs, 'Deployment', 'webhook-fanout-ingest')).template.spec.containers[0]!;
    expect(container.env!.filter((e) => e.name === 'ADMIN_API_ENABLED' || e.name.startsWith('CONSOLE_'))).toEqual([
      { name: 'ADMIN_API_ENABLED', value: 'true' },
      { name: 'CONSOLE_ENABLED', value: 'false' },
    ]);
    // what the process makes of it: it starts (no config error), admin API on, console off
    const cfg = loadIngestConfig(effectiveEnv(container, NAMESPACE));
    expect(cfg.adminApi).toMatchObject({ authUrl: 'https://tenant.eu.auth0.com', audience: 'https://webhooks.example.com/api' });
    expect(cfg.console).toBeNull();
    // and the Ingress routes what it did, nothing for a console that is off
    const rules = one(objs, 'Ingress', 'webhook-fanout-ingest').spec as { rules: Array<{ http: { paths: Array<{ path: string }> } }> };
    expect(rules.rules.flatMap((r) => r.http.paths.map((p) => p.path))).toEqual(['/api']);
  });

  it('serves the console with the admin API: on with its client id, required when asked for, its settings passed, off otherwise', async () => {
    const admin = ['adminApi.enabled=true', 'adminApi.auth.url=https://idp.example.com', 'adminApi.auth.audience=api'];
    expect(await helmTemplateError({ set: [...admin, 'console.enabled=true'] })).toMatch(
      /console\.clientId is required when console\.enabled and adminApi\.enabled/,
    );
    expect(await helmTemplateError({ set: [...admin, 'console.clientId=spa', 'console.authFlow=hybrid'] })).toMatch(/authFlow/);
    expect(await helmTemplateError({ set: [...admin, 'console.clientId=a b'] })).toMatch(/clientId/);
    const consoleEnv = async (set: string[]) => {
      const objs = await render({ set });
      const env = deploymentSpec(one(objs, 'Deployment', 'webhook-fanout-ingest')).template.spec.containers[0]!.env!;
      const named = env.filter((e) => e.name.startsWith('CONSOLE_'));
      // what the process makes of it
      const cfg = loadIngestConfig({
        ...effectiveEnv(deploymentSpec(one(objs, 'Deployment', 'webhook-fanout-ingest')).template.spec.containers[0]!, NAMESPACE),
        TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:t',
      });
      return { named, console: cfg.console };
    };
    expect(await consoleEnv([...admin, 'console.clientId=spa', 'console.authFlow=code'])).toEqual({
      named: [
        { name: 'CONSOLE_AUTH_FLOW', value: 'code' },
        { name: 'CONSOLE_CLIENT_ID', value: 'spa' },
        { name: 'CONSOLE_ENABLED', value: 'true' },
      ],
      console: { clientId: 'spa', authFlow: 'code' },
    });
    expect(await consoleEnv([...admin, 'console.enabled=true', 'console.clientId=spa'])).toMatchObject({ console: { clientId: 'spa' } });
    expect(await consoleEnv([...admin, 'console.enabled=false', 'console.clientId=spa'])).toEqual({
      named: [{ name: 'CONSOLE_ENABLED', value: 'false' }],
      console: null,
    });
    expect(await consoleEnv(admin)).toEqual({ named: [{ name: 'CONSOLE_ENABLED', value: 'false' }], console: null });
    // the defaults: no admin API, no console (console.enabled alone turns nothing on)
    const defaults = await render();
    const env = deploymentSpec(one(defaults, 'Deployment', 'webhook-fanout-ingest')).template.spec.containers[0]!.env!;
    expect(env.filter((e) => e.name.startsWith('CONSOLE_'))).toEqual([]);
  });

  it('routes /console and the admin API through the Ingress when the console is on, on every host', async () => {
    const paths = async (set: string[]) => {
      const objs = await render({
        set: [
          'ingest.ingress.enabled=true',
          'ingest.ingress.hosts[0].host=a.example.com',
          'ingest.ingress.hosts[0].paths[0].path=/api/webhooks',
          'ingest.ingress.hosts[0].paths[0].pathType=Prefix',
          'ingest.ingress.hosts[1].host=b.example.com',
          'ingest.ingress.hosts[1].paths[0].path=/api',
          'ingest.ingress.hosts[1].paths[0].pathType=Prefix',
          ...set,
        ],
      });
      const spec = one(objs, 'Ingress', 'webhook-fanout-ingest').spec as {
        rules: Array<{ host: string; http: { paths: Array<{ path: string; pathType: string; backend: { service: { name: string } } }> } }>;
      };
      for (const r of spec.rules) for (const p of r.http.paths) expect(p.backend.service.name).toBe('webhook-fanout-ingest');
      return spec.rules.map((r) => [r.host, r.http.paths.map((p) => `${p.pathType} ${p.path}`)]);
    };
    expect(
      await paths([
        'adminApi.enabled=true',
        'adminApi.auth.url=https://idp.example.com',
        'adminApi.auth.audience=api',
        'console.clientId=spa',
      ]),
    ).toEqual([
      ['a.example.com', ['Prefix /api/webhooks', 'Prefix /console', 'Prefix /api']],
      ['b.example.com', ['Prefix /api', 'Prefix /console']],
    ]);
    expect(await paths([])).toEqual([
      ['a.example.com', ['Prefix /api/webhooks']],
      ['b.example.com', ['Prefix /api']],
    ]);
  });

  it('renders nothing for a disabled process', async () => {
    const objs = await render({ set: ['worker.enabled=false', 'operator.enabled=false'] });
    const components = new Set(objs.map((o) => o.metadata.labels?.['app.kubernetes.io/component']));
    expect(components.has('worker')).toBe(false);
    expect(components.has('operator')).toBe(false);
    expect(
      find(objs, 'ClusterRole')
        .map((r) => r.metadata.name)
        .sort(),
    ).toEqual([`${NAMESPACE}-webhook-fanout-edit`, `${NAMESPACE}-webhook-fanout-view`]);
  });
});

describe('layout, the helm create way', () => {
  it('renders one kind per template file, each under templates/<component>/ (release-wide ones at the top)', async () => {
    const text = await helmTemplate({ values: ['ci/full-values.yaml'], set: ['ingest.ingress.enabled=true'] });
    const kinds = new Map<string, Set<string>>();
    for (const doc of text.split(/^---$/m)) {
      const source = /^# Source: webhook-fanout\/(templates\/\S+)$/m.exec(doc)?.[1];
      const kind = /^kind: (\S+)$/m.exec(doc)?.[1];
      if (!source || !kind) continue;
      kinds.set(source, (kinds.get(source) ?? new Set()).add(kind));
    }
    expect(kinds.size).toBeGreaterThan(25);
    for (const [source, k] of kinds) {
      expect([...k], source).toHaveLength(1);
      expect(source, 'a component folder, or one of the release-wide files').toMatch(
        /^templates\/((ingest|consumer|worker|operator|migration|transport-setup|rbac|tenancy|tests)\/[a-z-]+\.yaml|servicemonitor\.yaml|prometheusrule\.yaml|dashboards\.yaml)$/,
      );
    }
    // the Deployments share one pod template: no other template file writes a container
    const files = (await readdir(path.join(CHART_DIR, 'templates'), { recursive: true })).filter((f) => f.endsWith('.yaml'));
    for (const f of files) {
      const body = await readFile(path.join(CHART_DIR, 'templates', f), 'utf8');
      if (f !== path.join('tests', 'test-webhook.yaml')) expect(body, f).not.toMatch(/containers:/);
    }
  });
});

describe('pods of every kind', () => {
  it('gives the hook Jobs the chart-wide pod settings too (labels, annotations, envFrom, scheduling)', () => {
    for (const name of ['wf-migrate', 'wf-setup-transport']) {
      const job = one(rendered.full!, 'Job', name);
      const tpl = (
        job.spec as {
          template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, unknown> };
        }
      ).template;
      // an injected sidecar would keep a Job from ever completing
      expect(tpl.metadata.labels['sidecar.istio.io/inject'], name).toBe('false');
      expect(tpl.metadata.annotations?.['cluster-autoscaler.kubernetes.io/safe-to-evict'], name).toBe('true');
      expect(tpl.spec.nodeSelector, name).toEqual({ 'kubernetes.io/os': 'linux' });
      expect(tpl.spec.tolerations, name).toEqual([{ key: 'dedicated', operator: 'Equal', value: 'webhooks', effect: 'NoSchedule' }]);
      expect(tpl.spec.priorityClassName, name).toBe('high-priority');
      expect(tpl.spec.restartPolicy, name).toBe('Never');
      const c = (tpl.spec.containers as Container[])[0]!;
      expect((c as { envFrom?: unknown }).envFrom, name).toEqual([{ configMapRef: { name: 'wf-extra-config' } }]);
      expect(c.readinessProbe, name).toBeUndefined();
    }
  });

  it('rolls the ingest without ever lowering its serving pods (maxUnavailable 0), unless set otherwise', async () => {
    const strategy = (o: K8sObject) => (o.spec as { strategy?: unknown }).strategy;
    expect(strategy(one(rendered.default!, 'Deployment', 'webhook-fanout-ingest'))).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(strategy(one(rendered.full!, 'Deployment', 'wf-ingest'))).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 },
    });
    const recreate = await render({ set: ['ingest.strategy.type=Recreate'] });
    expect(strategy(one(recreate, 'Deployment', 'webhook-fanout-ingest'))).toEqual({ type: 'Recreate' });
  });

  it('writes whole numbers of the settings as integers, not in exponent notation', () => {
    const env = deploymentSpec(one(rendered.full!, 'Deployment', 'wf-ingest')).template.spec.containers[0]!.env ?? [];
    expect(env.find((e) => e.name === 'INBOUND_BODY_LIMIT_BYTES')?.value).toBe('2097152');
    const worker = deploymentSpec(one(rendered.full!, 'Deployment', 'wf-worker')).template.spec.containers[0]!.env ?? [];
    expect(worker.find((e) => e.name === 'DELIVERY_BACKOFF_COEFFICIENT')?.value).toBe('1.5');
  });
});

describe('tenancy.sourceNames NamespacePrefixed and the Kubernetes version', () => {
  it('renders the ValidatingAdmissionPolicy and its binding from Kubernetes 1.30 on', async () => {
    const objects = await render({ set: ['tenancy.sourceNames=NamespacePrefixed'], kubeVersion: '1.30.0' });
    const kinds = objects.filter((o) => o.apiVersion === 'admissionregistration.k8s.io/v1').map((o) => o.kind);
    expect(kinds.sort()).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  });

  it('refuses it on 1.29, which has no admissionregistration.k8s.io/v1 policy, naming the way out', async () => {
    const err = await helmTemplateError({ set: ['tenancy.sourceNames=NamespacePrefixed'], kubeVersion: '1.29.5' });
    expect(err).toMatch(/NamespacePrefixed needs Kubernetes >= 1\.30.*set tenancy\.sourceNames: Any/);
  });

  it('renders no policy with the default Any, on any supported version', async () => {
    const objects = await render({ kubeVersion: '1.29.0' });
    expect(objects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
  });
});
