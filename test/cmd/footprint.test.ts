import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

// Code a process loads stays in its memory for its whole life (V8 keeps the source text, the
// image's --enable-source-maps keeps every source map). The Kubernetes client alone held about
// 25 MB of V8 heap and 80 MB of RSS in processes that never talk to Kubernetes, and the admin
// API's modules with the Temporal client more than 30 MB in an ingest that does not serve it
// (issue 12: ingest's RSS target is 150 MB). Those arrive through one innocent import.

/** Packages (under node_modules) that importing a command's module pulls in. */
async function packagesLoadedBy(commandModule: string): Promise<Set<string>> {
  // a module hook in the child records every module resolved while the command module is imported
  // (its main() is not run)
  const probe = `
    import { registerHooks } from 'node:module';
    const seen = new Set();
    registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.add(r.url); return r; } });
    await import(${JSON.stringify(`./src/cmd/${commandModule}.ts`)});
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

describe('what each process loads', () => {
  it('ingest without the admin API loads neither the Temporal client, the admin API nor the Kubernetes client', async () => {
    const loaded = await packagesLoadedBy('ingest');
    expect(loaded.has('fastify')).toBe(true); // the probe sees the packages a command loads
    for (const pkg of ['@temporalio/client', '@temporalio/proto', '@grpc/grpc-js', '@fastify/swagger', '@fastify/swagger-ui', 'typebox', 'get-jwks', '@kubernetes/client-node']) {
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
});
