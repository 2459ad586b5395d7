import { parseArgs } from 'node:util';
import { expressionProblems } from '../content/endpoint-expressions.js';
import { readManifestPaths } from '../manifests/read-manifests.js';
import { destinationRow } from '../custom-resources/destination-rows.js';
import { readEndpointSpec } from '../custom-resources/read-spec.js';
import type { WebhookEndpointSpec } from '../custom-resources/specs.js';

const USAGE = `usage: webhook-fanout validate -f <file or folder> [-f ...]

Checks WebhookEndpoint and InboundCredential manifests as the operator would: the schema, the
CRD's rules, each endpoint's spec.filter (CEL) and spec.transform.jsonata. No cluster, database
or Temporal. Prints each problem by file and document; exits 1 when there is one, 0 when none.`;

/** `webhook-fanout validate`: for a GitOps pipeline, before anything is applied (docs/gitops.md). */
export async function main(_env: NodeJS.ProcessEnv, argv: string[]): Promise<void> {
  let paths: string[];
  try {
    const { values } = parseArgs({
      args: argv,
      options: { file: { type: 'string', short: 'f', multiple: true }, help: { type: 'boolean', short: 'h' } },
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    paths = values.file ?? [];
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (paths.length === 0) {
    process.stderr.write(`validate needs -f <file or folder>\n\n${USAGE}\n`);
    process.exit(2);
  }
  let set;
  try {
    set = await readManifestPaths(paths);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
  const problems = [...set.errors];
  for (const r of set.endpoints) {
    const where = `${set.origins.get(r) ?? '?'}: WebhookEndpoint ${r.metadata.namespace ?? 'default'}/${r.metadata.name}`;
    // what the CRD's CEL rules say beyond the schema (a timeout out of bounds, a signing declared twice)
    const read = await specReadProblem(r.spec);
    if (read) problems.push(`${where}: ${read}`);
    for (const p of expressionProblems(r.spec)) problems.push(`${where}: ${p.message}`);
  }
  const checked = `${set.endpoints.length} WebhookEndpoint(s), ${set.credentials.length} InboundCredential(s)`;
  if (problems.length > 0) {
    process.stdout.write(`${problems.join('\n')}\n${problems.length} problem(s) in ${paths.join(' ')} (${checked} valid)\n`);
    process.exit(1);
  }
  process.stdout.write(`ok: ${checked} in ${paths.join(' ')}\n`);
}

/** What readEndpointSpec and the destination's block refuse (in the CRD's words), or undefined. */
async function specReadProblem(spec: WebhookEndpointSpec): Promise<string | undefined> {
  try {
    readEndpointSpec(spec);
    // the destination's own rules (a username without its passwordSecretRef...); no Secret is read offline
    await destinationRow(spec.destination, () => Promise.resolve(''));
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
