import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/dev/ports.js';
import { createAwsClients } from '../../src/transport/aws-clients.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { basic, http } from '../support/http.js';
import { kubeconfigYaml, OPERATOR_NAMESPACE, OPERATOR_USER, type KubeConnection } from '../support/kube.js';
import { apply, createNamespace, customObjects, ready, sharedKube } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { engine, IMAGE, nodeInImage, runOnce, startService, type Service } from './support/container.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('kube');

/**
 * The image as the chart runs it (test/image/support/container.ts CHART_FLAGS): every process of
 * webhook-fanout in its own container against real Postgres, the Temporal dev server, fauxqs (SNS/
 * SQS over HTTP) and the kube-apiserver of the operator tests. Needs the image:
 * `bash scripts/image/build.sh`, then `npm run test:image`.
 */

// charts/webhook-fanout/values.yaml terminationGracePeriodSeconds
const GRACE_MS = { ingest: 45_000, consumer: 45_000, worker: 60_000, operator: 45_000 } as const;

let t: TestDatabase;
let conn: KubeConnection;
let receiver: Receiver;
let fauxqs: Awaited<ReturnType<typeof startFauxqs>>;
let ns: string;
let dir: string;
let transport: { TOPIC_ARN: string; QUEUE_URL: string };
const services = new Map<keyof typeof GRACE_MS, Service>();
const mgmt: Record<keyof typeof GRACE_MS, number> = { ingest: 0, consumer: 0, worker: 0, operator: 0 };
let ingestPort = 0;
let common: Record<string, string>;

beforeAll(async () => {
  [t, conn, receiver, fauxqs] = await Promise.all([
    createTestDatabase(),
    sharedKube(),
    startReceiver(),
    startFauxqs({ port: 0, logger: false }),
  ]);
  // an empty database, as a new install finds it: the image's `migrate` creates the schema
  await t.db.raw('drop schema public cascade; create schema public');
  ns = await createNamespace(conn, 'image');
  dir = await mkdtemp(path.join(tmpdir(), 'wf-image-'));
  await writeFile(path.join(dir, 'kubeconfig'), kubeconfigYaml(conn, OPERATOR_USER, conn.operatorToken, OPERATOR_NAMESPACE), {
    mode: 0o644,
  });
  for (const k of Object.keys(mgmt) as (keyof typeof GRACE_MS)[]) mgmt[k] = await freePort();
  ingestPort = await freePort();
  common = { DATABASE_URL: t.url, TEMPORAL_ADDRESS: inject('temporalAddress'), AWS_ENDPOINT_URL: fauxqs.address, AWS_REGION: 'us-east-1' };
}, 180_000);

afterAll(async () => {
  await Promise.allSettled([...services.values()].map((s) => s.remove()));
  await Promise.allSettled([t?.destroy(), receiver?.close(), fauxqs?.stop(), dir ? rm(dir, { recursive: true, force: true }) : undefined]);
});

describe('the image itself', () => {
  it('runs as uid/gid 1000 with HOME and TMPDIR in /tmp, the CLI as entrypoint, management and ingest ports exposed', async () => {
    const r = await engine(['image', 'inspect', IMAGE, '--format', '{{json .Config}}']);
    expect(r.code, r.stderr).toBe(0);
    const cfg = JSON.parse(r.stdout) as {
      User: string;
      Env: string[];
      Entrypoint: string[];
      ExposedPorts: Record<string, unknown>;
      Labels: Record<string, string>;
    };
    expect(cfg.User).toBe('1000:1000');
    expect(cfg.Env).toEqual(expect.arrayContaining(['HOME=/tmp', 'TMPDIR=/tmp', 'NODE_ENV=production']));
    expect(cfg.Entrypoint).toEqual(['node', '/app/dist/cmd/cli.js']);
    expect(Object.keys(cfg.ExposedPorts).sort()).toEqual(['8080/tcp', '9090/tcp']);
    expect(cfg.Labels['org.opencontainers.image.title']).toBe('webhook-fanout');
  });

  it('adds at most 200 MB to its base (the budget; per layer: npm run bench:image)', async () => {
    const size = async (image: string) => Number((await engine(['image', 'inspect', image, '--format', '{{.Size}}'])).stdout.trim());
    const [own, base] = await Promise.all([size(IMAGE), size('docker.io/library/node:24-bookworm-slim')]);
    expect(base).toBeGreaterThan(50e6);
    expect(own - base).toBeGreaterThan(20e6);
    expect(own - base).toBeLessThanOrEqual(200e6);
  });

  it('has no dev mode: the CLI says `dev` runs from a checkout only', async () => {
    const help = await runOnce(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('dev              from a checkout only');
    const dev = await runOnce(['dev']);
    expect(dev.code).toBe(2);
    expect(dev.stderr).toContain('runs from a checkout only');
  });

  it('imports no devDependency: every import of dist/ names a production dependency or a Node built-in, and every module loads', async () => {
    // devDependencies that the production tree does not also need (the lock file marks them dev):
    // a test may import a package such as @temporalio/proto that @temporalio/client brings anyway
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8')) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.keys(
      (JSON.parse(await readFile('package.json', 'utf8')) as { devDependencies: Record<string, string> }).devDependencies,
    ).filter((d) => lock.packages[`node_modules/${d}`]?.dev === true);
    expect(devOnly.length).toBeGreaterThan(10);
    const r = await nodeInImage(`
      import { readFileSync, readdirSync, existsSync } from 'node:fs';
      import { builtinModules } from 'node:module';
      import path from 'node:path';
      const pkg = JSON.parse(readFileSync('/app/package.json', 'utf8'));
      const allowed = new Set(Object.keys(pkg.dependencies));
      // dist/console/ is the browser's (the console, bundled by Vite): Node neither imports nor can load it
      const files = readdirSync('/app/dist', { recursive: true }).filter((f) => f.endsWith('.js') && !f.startsWith('workflow-bundle') && !f.startsWith('console/'));
      const bad = [];
      let imports = 0;
      for (const f of files) {
        const text = readFileSync(path.join('/app/dist', f), 'utf8');
        const specs = [
          ...text.matchAll(/^(?:import|export)\\s[^;]*?\\sfrom\\s*(['"])([^'"\\n]+)\\1/gm),
          ...text.matchAll(/^import\\s*(['"])([^'"\\n]+)\\1/gm),
          ...text.matchAll(/\\bimport\\(\\s*(['"])([^'"\\n]+)\\1\\s*\\)/g),
        ].map((m) => m[2]);
        for (const spec of specs) {
          imports++;
          if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) continue;
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
          if (!allowed.has(name)) bad.push(f + ': ' + spec);
        }
      }
      const failed = [];
      for (const f of files.filter((f) => f !== 'cmd/cli.js')) {
        try { await import(path.join('/app/dist', f)); } catch (err) { failed.push(f + ': ' + err.message); }
      }
      const devDeps = ${JSON.stringify(devOnly)}.filter((d) => existsSync('/app/node_modules/' + d));
      console.log(JSON.stringify({ files: files.length, imports, bad, failed, devDeps,
        devCode: ['dev', 'cmd/dev.js', 'workflows/fanout.js'].filter((f) => existsSync('/app/dist/' + f)),
        bundler: ['@swc/core', 'swc-loader'].filter((d) => existsSync('/app/node_modules/' + d)) }));
      process.exit(0);
    `);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      files: number;
      imports: number;
      bad: string[];
      failed: string[];
      devDeps: string[];
      devCode: string[];
      bundler: string[];
    };
    expect(out.files).toBeGreaterThan(50);
    expect(out.imports).toBeGreaterThan(200);
    expect(out.bad).toEqual([]);
    expect(out.failed).toEqual([]);
    expect(out.devDeps).toEqual([]);
    expect(out.devCode).toEqual([]);
    expect(out.bundler).toEqual([]);
  });
});

describe('every process from the image, as the chart runs it', () => {
  it('migrate creates the schema, and a second run changes nothing', async () => {
    // every migration of the checkout, which the image carries
    const files = (await readdir(new URL('../../migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();
    const first = await runOnce(['migrate'], { env: { DATABASE_URL: t.url } });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`applied ${files.length} migration`);
    const second = await runOnce(['migrate'], { env: { DATABASE_URL: t.url } });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('schema up to date');
    expect((await t.db('knex_migrations').select('name').orderBy('id')).map((r: { name: string }) => r.name)).toEqual(files);
  });

  it('setup-transport creates the topic and queues on the SNS/SQS endpoint and prints their addresses', async () => {
    const r = await runOnce(['setup-transport'], {
      env: { ...common, TOPIC_NAME: 'image-events', QUEUE_NAME: 'image-events', DLQ_NAME: 'image-dlq' },
    });
    expect(r.code, r.stderr).toBe(0);
    const vars = Object.fromEntries(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('=', 2) as [string, string]),
    );
    expect(vars.TOPIC_ARN).toMatch(/:image-events$/);
    expect(vars.QUEUE_URL).toMatch(/\/image-events$/);
    transport = { TOPIC_ARN: vars.TOPIC_ARN!, QUEUE_URL: vars.QUEUE_URL! };
    // the queue exists at the printed URL
    const aws = createAwsClients({ region: 'us-east-1', endpoint: fauxqs.address });
    try {
      const attrs = await aws.sqs.send(new GetQueueAttributesCommand({ QueueUrl: transport.QUEUE_URL, AttributeNames: ['RedrivePolicy'] }));
      expect(attrs.Attributes?.RedrivePolicy).toContain('image-dlq');
    } finally {
      aws.sqs.destroy();
      aws.sns.destroy();
    }
  });

  it('ingest, consumer, worker and operator start and answer /healthz, /readyz and /metrics on the management port', async () => {
    const kube = ['-v', `${path.join(dir, 'kubeconfig')}:/etc/webhook-fanout/kubeconfig:ro`];
    const started = await Promise.all([
      startService(
        'operator',
        {
          ...common,
          MANAGEMENT_PORT: String(mgmt.operator),
          KUBECONFIG: '/etc/webhook-fanout/kubeconfig',
          WATCH_NAMESPACE: ns,
          LEADER_ELECTION_NAMESPACE: OPERATOR_NAMESPACE,
          LEADER_ELECTION_LEASE_NAME: `image-${ns}`,
          POD_NAME: 'operator-image-test',
        },
        kube,
      ),
      startService('worker', {
        ...common,
        MANAGEMENT_PORT: String(mgmt.worker),
        TEMPORAL_TASK_QUEUE: `image-${ns}`,
        DELIVERY_BACKOFF_INITIAL_MS: '100',
      }),
      startService('consumer', {
        ...common,
        MANAGEMENT_PORT: String(mgmt.consumer),
        QUEUE_URL: transport.QUEUE_URL,
        TEMPORAL_TASK_QUEUE: `image-${ns}`,
      }),
      // the admin API needs an OIDC issuer (AUTH_URL); its own tests cover it: off here
      startService('ingest', {
        ...common,
        MANAGEMENT_PORT: String(mgmt.ingest),
        PORT: String(ingestPort),
        HOST: '127.0.0.1',
        TOPIC_ARN: transport.TOPIC_ARN,
        ADMIN_API_ENABLED: 'false',
      }),
    ]);
    for (const [i, name] of (['operator', 'worker', 'consumer', 'ingest'] as const).entries()) services.set(name, started[i]!);

    for (const [name, port] of Object.entries(mgmt)) {
      const svc = services.get(name as keyof typeof GRACE_MS)!;
      const readyz = await eventually(
        async () => {
          const r = await http(`http://127.0.0.1:${port}/readyz`, { method: 'GET' }).catch(() => undefined);
          return r?.status === 200 ? r : undefined;
        },
        { timeoutMs: 60_000, what: `${name} /readyz` },
      ).catch(async (err: unknown) => {
        throw new Error(`${String(err)}\n${name} logs:\n${await svc.logs()}`);
      });
      expect(readyz.status).toBe(200);
      expect((await http(`http://127.0.0.1:${port}/healthz`, { method: 'GET' })).status).toBe(200);
      const metrics = await http(`http://127.0.0.1:${port}/metrics`, { method: 'GET' });
      expect(metrics.status).toBe(200);
      expect(metrics.text).toContain('process_resident_memory_bytes');
    }
    const workerLogs = await services.get('worker')!.logs();
    expect(workerLogs).toContain('workflow code: prebuilt bundle');
    // without tracing: the bundle without the tracing interceptors; the image's SDK carries the
    // patch (patches/), so the sandbox runs without its diagnostics, on the main thread, its
    // globals locked
    expect(workerLogs).toContain('"workflowBundle":"/app/dist/workflow-bundle.js"');
    expect(workerLogs).toContain('"sandbox":"diagnostics-off","globals":"locked"');
  }, 120_000);

  it('a webhook sent to the ingest container reaches the receiver the custom resources configure, with the right headers', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: v1
kind: Secret
metadata: {name: acme-inbound}
stringData: {password: inbound-pw}
---
apiVersion: v1
kind: Secret
metadata: {name: orders-auth}
stringData: {token: token-1}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: acme}
spec: {source: acme, username: acme-sender, passwordSecretRef: {name: acme-inbound, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: orders}
spec:
  source: acme
  eventType: order.created
  url: ${receiver.url.replace(/\/hook$/, '')}/orders
  auth: {type: BEARER, secretRef: {name: orders-auth, key: token}}
  customHeaders: {X-Team: orders}
`,
    );
    const crs = customObjects(conn);
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'orders'))?.status === 'True', {
      what: 'orders Ready (operator container)',
    });
    await eventually(async () => ready(await crs.get('InboundCredential', ns, 'acme'))?.status === 'True', {
      what: 'acme Ready (operator container)',
    });

    const res = await eventually(
      async () => {
        const r = await http(`http://127.0.0.1:${ingestPort}/api/webhooks/acme`, {
          headers: { authorization: basic('acme-sender', 'inbound-pw'), 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'img-1', type: 'order.created', amount: 7 }),
        });
        return r.status === 200 ? r : undefined;
      },
      { what: 'ingest container accepting the credential' },
    );
    const { eventId } = res.json() as { eventId: string };
    const got = await eventually(
      async () => receiver.requests.find((r) => r.path === '/orders' && r.headers['x-webhook-event-id'] === eventId),
      {
        timeoutMs: 30_000,
        what: 'the delivery from the worker container',
      },
    );
    expect(got.method).toBe('POST');
    expect(got.headers.authorization).toBe('Bearer token-1');
    expect(got.headers['x-team']).toBe('orders');
    expect(got.headers['content-type']).toContain('application/json');
    expect(JSON.parse(got.body.toString())).toEqual({ id: 'img-1', type: 'order.created', amount: 7 });
  });

  it("SIGTERM stops each container cleanly within the chart's terminationGracePeriodSeconds", async () => {
    // reverse order of the data flow, as a rollout might; each on its own
    for (const name of ['ingest', 'consumer', 'worker', 'operator'] as const) {
      const svc = services.get(name)!;
      const { code, ms } = await svc.terminate();
      expect(code, `${name} exit code`).toBe(0);
      expect(ms, `${name} stop time`).toBeLessThan(GRACE_MS[name]);
      expect(await svc.logs()).toContain(`${name}: stopped`);
    }
  }, 240_000);
});

describe('a container with a missing or wrong setting', () => {
  it('exits non-zero naming the missing setting', async () => {
    const r = await runOnce(['consumer'], { env: { TEMPORAL_ADDRESS: inject('temporalAddress') } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATABASE_URL is required');
    expect(r.stderr).toContain('QUEUE_URL is required');
  });

  it('exits non-zero naming the wrong setting', async () => {
    const r = await runOnce(['worker'], { env: { DATABASE_URL: t.url, WORKER_MAX_CONCURRENT_ACTIVITIES: 'many' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('WORKER_MAX_CONCURRENT_ACTIVITIES must be an integer');
  });
});
