import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

// Code a process loads stays in its memory for its whole life (V8 keeps the source text, the
// image's --enable-source-maps keeps every source map). The Kubernetes client and the admin API's
// modules with the Temporal client each held tens of MB in processes that never use them
// (figures and ingest's memory target: docs/benchmarks.md). Those arrive through one innocent import.

/**
 * Packages (under node_modules) resolved while `body` runs in a child process: a module hook
 * records every module resolved. `body` is module code that may await.
 */
async function packagesLoadedWhile(body: string): Promise<Set<string>> {
  const probe = `
    import { registerHooks } from 'node:module';
    const seen = new Set();
    registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.add(r.url); return r; } });
    ${body}
    process.stdout.write(JSON.stringify([...seen]));
  `;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    timeout: 60_000,
  });
  const packages = new Set<string>();
  for (const url of JSON.parse(stdout) as string[]) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m?.[1]) packages.add(m[1]);
  }
  return packages;
}

/** Packages that importing a command's module pulls in (its main() is not run). */
function packagesLoadedBy(commandModule: string): Promise<Set<string>> {
  return packagesLoadedWhile(`await import(${JSON.stringify(`./src/cmd/${commandModule}.ts`)});`);
}

describe('what each process loads', () => {
  // tracing off (no OTEL_ endpoint) must cost nothing: the SDK, its exporters and Temporal's
  // interceptors are imported by observability/tracing.ts only once tracing is on
  it.each(['ingest', 'consumer', 'worker'])("the %s does not load OpenTelemetry's SDK until tracing is on", async (command) => {
    const loaded = await packagesLoadedBy(command);
    for (const pkg of [
      '@opentelemetry/sdk-trace-node',
      '@opentelemetry/sdk-trace-base',
      '@opentelemetry/exporter-trace-otlp-proto',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/exporter-trace-otlp-grpc',
      '@opentelemetry/resources',
      '@temporalio/interceptors-opentelemetry',
    ]) {
      expect(loaded, pkg).not.toContain(pkg);
    }
  });

  it('ingest without the admin API loads neither the Temporal client, the admin API, the SQS client nor the Kubernetes client', async () => {
    const loaded = await packagesLoadedBy('ingest');
    expect(loaded.has('fastify')).toBe(true); // the probe sees the packages a command loads
    expect(loaded.has('@aws-sdk/client-sns')).toBe(true);
    // ingest only publishes
    for (const pkg of [
      '@temporalio/client',
      '@temporalio/proto',
      '@grpc/grpc-js',
      '@fastify/swagger',
      '@fastify/swagger-ui',
      'typebox',
      'get-jwks',
      '@kubernetes/client-node',
      '@aws-sdk/client-sqs',
    ]) {
      expect(loaded, pkg).not.toContain(pkg);
    }
  });

  // neither publishes: the SNS client (and the XML protocol code only it uses) stays out, about
  // 2 MB of V8 heap against the consumer's 120 MB target
  it.each(['consumer', 'worker'])('the %s loads neither the Kubernetes client nor the SNS client', async (command) => {
    const loaded = await packagesLoadedBy(command);
    expect(loaded.has('@temporalio/client')).toBe(true);
    expect(loaded.has('@aws-sdk/client-sqs')).toBe(true);
    expect(loaded).not.toContain('@kubernetes/client-node');
    expect(loaded).not.toContain('@aws-sdk/client-sns');
  });

  it('the admin API loads the Temporal client on the first replay, not before', async () => {
    // what ingest does with the admin API enabled: the plugin wired from configuration, then a replay
    const wire = `
      const { lazyTemporalClient } = await import('./src/api/start-replay.ts');
      const { adminApiFromConfig } = await import('./src/api/admin-api-from-config.ts');
      const temporal = lazyTemporalClient({ address: '127.0.0.1:1', namespace: 'default' });
      adminApiFromConfig({
        auth: { authUrl: 'http://127.0.0.1:1', audience: 'a', issuer: 'i', clockToleranceSeconds: 0, jwksCacheTtlSeconds: 1 },
        temporal: { client: temporal.client, taskQueue: 'WEBHOOKS' },
        db: {}, repos: { operationalEvents: { source: 'webhook-fanout' } }, logger: {},
      });
    `;
    const atRest = await packagesLoadedWhile(wire);
    expect(atRest.has('get-jwks')).toBe(true); // the admin API's own modules were loaded
    for (const pkg of ['@temporalio/client', '@temporalio/proto', '@grpc/grpc-js']) expect(atRest, pkg).not.toContain(pkg);

    const afterReplay = await packagesLoadedWhile(`${wire}
      const client = await temporal.client();
      if (client !== (await temporal.client())) throw new Error('a second client was made');
      await temporal.close();
    `);
    expect(afterReplay).toContain('@temporalio/client');
  });
});
