import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../support/kube.js';
import { apply, applyRefused, customObjects, ready, secretYaml, whenReady } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import type { TestDatabase } from '../support/db.js';

/**
 * spec.filter and spec.transform.jsonata under the operator, against a real kube-apiserver and
 * Postgres: an expression that does not compile is Ready=False InvalidFilter / InvalidTransform
 * with the parser's message and position, the row keeps its last valid expression, a new
 * endpoint with an invalid one gets no row (it is not routed), and the CRD caps the length.
 */
let conn: KubeConnection;
let tdb: TestDatabase;
let ns: string;
let scene: OperatorScene;

beforeAll(async () => {
  scene = await startOperatorScene('content');
  ({ conn, tdb, ns } = scene);
  // the source's credential, in the endpoints' namespace: without one an endpoint is SourceNotFound (docs/tenancy.md)
  await apply(
    conn,
    ns,
    `${secretYaml('content-inbound', { password: 'content-password' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: content}
spec:
  source: ${source()}
  username: content-sender
  passwordSecretRef: {name: content-inbound, key: password}
`,
  );
  await whenReady(conn, 'InboundCredential', ns, 'content');
}, 120_000);

afterAll(async () => {
  await scene?.close();
});

/** a source of this file's own namespace: sources are cluster-wide */
const source = () => `src-${ns}`;

const endpointYaml = (name: string, extra: string) => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ${name}}
spec:
  source: ${source()}
  url: https://receiver.example.com/hooks
${extra}`;

const notReady = (name: string, reason: string) =>
  eventually(
    async () => {
      const o = await customObjects(conn).get('WebhookEndpoint', ns, name);
      return ready(o)?.reason === reason ? o : undefined;
    },
    { what: `${name} Ready=False ${reason}` },
  );

const rowOf = async (name: string) =>
  (await tdb
    .db('webhook_endpoint')
    .where({ name: `${ns}/${name}` })
    .first()) as { filter: string | null; transform_jsonata: string | null } | undefined;

describe('WebhookEndpoint spec.filter and spec.transform under the operator', () => {
  it('a valid filter and transform reach the row; an invalid edit is InvalidFilter with its position and the row keeps the last valid one', async () => {
    const filter = "event.type.startsWith('invoice.') && event.data.amount >= 100";
    const transform = '{"kind": type, "total": data.amount}';
    await apply(conn, ns, endpointYaml('billing', `  filter: "${filter}"\n  transform:\n    jsonata: '${transform}'\n`));
    await whenReady(conn, 'WebhookEndpoint', ns, 'billing');
    expect(await rowOf('billing')).toMatchObject({ filter, transform_jsonata: transform });

    await apply(conn, ns, endpointYaml('billing', `  filter: "event.type.startsWith("\n  transform:\n    jsonata: '${transform}'\n`));
    const bad = await notReady('billing', 'InvalidFilter');
    expect(ready(bad)?.status).toBe('False');
    expect(ready(bad)?.message).toContain('spec.filter at 1:11: syntax error');
    expect(await rowOf('billing')).toMatchObject({ filter, transform_jsonata: transform });

    await apply(conn, ns, endpointYaml('billing', `  filter: "${filter}"\n  transform:\n    jsonata: '{"kind": type'\n`));
    const badTransform = await notReady('billing', 'InvalidTransform');
    expect(ready(badTransform)?.message).toMatch(/spec\.transform\.jsonata at 1:\d+: S0203/);
    expect(await rowOf('billing')).toMatchObject({ filter, transform_jsonata: transform });

    // fixed: Ready again, the new expression in the row
    await apply(conn, ns, endpointYaml('billing', '  filter: "event.type == \'invoice.paid\'"\n'));
    await eventually(async () => (await rowOf('billing'))?.filter === "event.type == 'invoice.paid'", {
      what: 'the fixed filter in the row',
    });
    expect(await rowOf('billing')).toMatchObject({ transform_jsonata: null });
    await eventually(async () => ready(await customObjects(conn).get('WebhookEndpoint', ns, 'billing'))?.status === 'True', {
      what: 'Ready again',
    });
  });

  it('a new endpoint with an invalid filter gets no row: it is not routed', async () => {
    await apply(conn, ns, endpointYaml('typo', '  filter: "event.dta.amount > 1"\n'));
    const bad = await notReady('typo', 'InvalidFilter');
    expect(ready(bad)?.message).toContain("spec.filter at 1:6: event has no field 'dta'");
    expect(await rowOf('typo')).toBeUndefined();
  });

  it('the API server refuses a filter over the CRD cap', async () => {
    const refused = await applyRefused(conn, ns, endpointYaml('long', `  filter: "${'1 == 1 && '.repeat(500)}true"\n`));
    expect(refused).toMatch(/spec\.filter: Too long: may not be (longer|more) than 4096/);
  });
});
