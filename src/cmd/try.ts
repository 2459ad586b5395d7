import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { contentEvent } from '../content/event-view.js';
import { formatExpressionError, compileFilter } from '../content/filter.js';
import { compileTransform } from '../content/transform.js';
import { compileOrderingKey } from '../content/ordering-key.js';
import { destinationRow } from '../custom-resources/destination-rows.js';
import { readEndpointSpec } from '../custom-resources/read-spec.js';
import { readManifestPaths } from '../manifests/read-manifests.js';

const USAGE = `usage: webhook-fanout try -f <endpoint.yaml> --event <payload.json>
                          [--type <event type>] [--source <source>] [--id <event id>]
                          [--header name=value ...] [--name <endpoint>]

Says whether the WebhookEndpoint would be routed the event (its source, eventType and
spec.filter), where it would go (spec.destination's type and target, or spec.url), the key it
would be ordered by (spec.ordering.key) and the body it would receive (after
spec.transform.jsonata). The event type
defaults to the payload's "type" field, its id to the payload's "id", the source to the
endpoint's. No cluster, database or Temporal. Exits 0 when routed, 1 when not (or when the
transform fails), 2 when the input or an expression is invalid.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/** `webhook-fanout try`: one endpoint, one payload, offline (docs/gitops.md). */
export async function main(_env: NodeJS.ProcessEnv, argv: string[]): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        file: { type: 'string', short: 'f' },
        event: { type: 'string', short: 'e' },
        type: { type: 'string' },
        source: { type: 'string' },
        id: { type: 'string' },
        name: { type: 'string' },
        header: { type: 'string', short: 'H', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    fail(`${(err as Error).message}\n\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.file === undefined || values.event === undefined) fail(`try needs -f <endpoint.yaml> and --event <payload.json>\n\n${USAGE}`);

  const set = await readManifestPaths([values.file]).catch((err: unknown) => fail((err as Error).message));
  if (set.errors.length > 0) fail(set.errors.join('\n'));
  const candidates = values.name === undefined ? set.endpoints : set.endpoints.filter((r) => r.metadata.name === values.name);
  const [endpoint, ...more] = candidates;
  if (endpoint === undefined) fail(`no WebhookEndpoint${values.name === undefined ? '' : ` named ${values.name}`} in ${values.file}`);
  if (more.length > 0) fail(`${values.file} has ${candidates.length} WebhookEndpoints: name one with --name`);

  const payload = await readFile(values.event).catch((err: unknown) => fail((err as Error).message));
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const h of values.header ?? []) {
    const eq = h.indexOf('=');
    if (eq <= 0) fail(`--header ${h}: expected name=value`);
    headers[h.slice(0, eq).trim().toLowerCase()] = h.slice(eq + 1);
  }
  const parsed = contentEvent({ source: '', eventType: null, externalEventId: null, receivedAt: new Date(), headers: {}, payload }).data;
  const field = (k: string): string | null => {
    const v = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>)[k] : undefined;
    return typeof v === 'string' ? v : null;
  };
  const spec = endpoint.spec;
  const event = contentEvent({
    source: values.source ?? spec.source,
    eventType: values.type ?? field('type'),
    externalEventId: values.id ?? field('id'),
    receivedAt: new Date(),
    headers,
    payload,
  });
  const name = `WebhookEndpoint ${endpoint.metadata.namespace ?? 'default'}/${endpoint.metadata.name}`;

  const filter = spec.filter === undefined ? undefined : compileFilter(spec.filter);
  if (filter && !filter.ok) fail(`${name}: spec.filter ${formatExpressionError(filter.error)}`);
  const transform = spec.transform === undefined ? undefined : compileTransform(spec.transform.jsonata);
  if (transform && !transform.ok) fail(`${name}: spec.transform.jsonata ${formatExpressionError(transform.error)}`);
  const orderingKey = spec.ordering?.key === undefined ? undefined : compileOrderingKey(spec.ordering.key);
  if (orderingKey && !orderingKey.ok) fail(`${name}: spec.ordering.key ${formatExpressionError(orderingKey.error)}`);
  // where it goes, as the admin API and the console show it (never a secret: none is read offline);
  // the CRD's rules first, so a block that is missing or not its type's is said in their words
  const destination = await Promise.resolve()
    .then(() => destinationRow(readEndpointSpec(spec).destination, () => Promise.resolve('')))
    .catch((err: unknown) => fail(`${name}: ${(err as Error).message}`));

  const say = (line: string) => process.stdout.write(`${line}\n`);
  const notRouted: (why: string) => never = (why) => {
    say(`not routed: ${why}`);
    process.exit(1);
  };
  if (event.source !== spec.source) notRouted(`the event's source is "${event.source}", the endpoint's "${spec.source}"`);
  if (spec.eventType !== undefined && event.type !== spec.eventType) {
    notRouted(`the event's type is "${event.type}", the endpoint takes only "${spec.eventType}"`);
  }
  if (filter) {
    const outcome = filter.value.evaluate(event);
    if ('error' in outcome) notRouted(`the filter failed (counted as not matched): ${outcome.error}`);
    if (!outcome.matched) notRouted('the filter is false for this event');
  }
  say(`routed: ${name} (source "${event.source}", type "${event.type}"${filter ? ', filter true' : ''})`);
  say(`destination: ${destination.destination.type} ${destination.address ?? spec.url ?? ''}`);
  if (spec.ordering) {
    // docs/ordering.md: a key that fails or is no string puts the event in the no-key sequence
    const outcome = orderingKey?.value.keyOf(event);
    if (outcome === undefined) say('ordering key: none (the whole endpoint is one sequence)');
    else if ('key' in outcome) say(`ordering key: ${JSON.stringify(outcome.key)}`);
    else say(`ordering key: the no-key sequence (${outcome.error})`);
  }
  if (transform) {
    const out = await transform.value.apply(event);
    if ('retryable' in out) {
      say(`each attempt would fail without a request and be retried, then end FAILED: ${out.error}`);
      process.exit(1);
    }
    if ('error' in out) {
      say(`the delivery would end FAILED: ${out.error}`);
      process.exit(1);
    }
    say('body (after spec.transform.jsonata):');
    say(out.body.toString('utf8'));
  } else {
    say('body (the payload as received):');
    say(payload.toString('utf8'));
  }
}
