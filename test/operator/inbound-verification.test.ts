import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../support/kube.js';
import { apply, customObjects, ready, secretYaml, whenReady } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { type TestDatabase } from '../support/db.js';
import { http } from '../support/http.js';
import { startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';
import { provider, verificationYaml, whsec } from '../support/providers.js';
import { type OperatorStore } from '../../src/operator/store.js';

/**
 * spec.verification under the operator, against a real kube-apiserver and Postgres: the Secrets of
 * secretRefs reach the row, a changed Secret is picked up without a restart, and a webhook signed
 * by the provider's own library is accepted by an ingest on that database while the old secret's
 * signature no longer is.
 */
let conn: KubeConnection;
let tdb: TestDatabase;
let store: OperatorStore;
let ns: string;
let ingest: IngestHarness;

let scene: OperatorScene;

beforeAll(async () => {
  scene = await startOperatorScene('sig');
  ({ conn, tdb, store, ns } = scene);
  ingest = await startIngestHarness({ db: tdb.db, rowTtlMs: 200 });
}, 120_000);

afterAll(async () => {
  await ingest?.close();
  await scene?.close();
});

describe('InboundCredential spec.verification under the operator', () => {
  const stripe = provider('Stripe');
  const standard = provider('StandardWebhooks');
  const now = () => Math.floor(Date.now() / 1000);
  const send = async (source: string, body: string, headers: Record<string, string>) =>
    (await http(`${ingest.url}/api/webhooks/${source}`, { headers: { 'content-type': 'application/json', ...headers }, body })).status;

  it('the secrets of secretRefs reach the row; a webhook signed by stripe-node under either is accepted', async () => {
    await apply(
      conn,
      ns,
      `${secretYaml('stripe-signing', { current: stripe.secret, previous: stripe.other })}---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: stripe}
spec:
  source: op-stripe
  verification: ${verificationYaml(stripe, 'stripe-signing', ['current', 'previous'])}
`,
    );
    const cr = await whenReady(conn, 'InboundCredential', ns, 'stripe');
    const row = await store.credentialByUid(cr.metadata.uid);
    expect(row).toMatchObject({
      source: 'op-stripe',
      username: null,
      passwordHash: null,
      verification: { type: 'Stripe', secrets: [stripe.secret, stripe.other], toleranceSeconds: 300 },
    });
    for (const secret of [stripe.secret, stripe.other]) {
      const e = stripe.event(1000);
      expect(await send('op-stripe', e.body, await stripe.sign(e.body, secret, now()))).toBe(200);
    }
  });

  it('a Secret changed at run time updates the row: the new secret verifies, the replaced one no longer does', async () => {
    const next = 'whsec_rotated-at-run-time';
    await apply(conn, ns, secretYaml('stripe-signing', { current: next, previous: stripe.other }));
    await eventually(
      async () => (await tdb.db('webhook_inbound_credential').where({ source: 'op-stripe' }).first())?.verification?.secrets?.[0] === next,
      {
        what: 'the rotated secret in the row',
      },
    );
    const e = stripe.event(1001);
    await eventually(async () => (await send('op-stripe', e.body, await stripe.sign(e.body, stripe.secret, now()))) === 401, {
      what: 'the old secret refused',
    });
    expect(await send('op-stripe', e.body, await stripe.sign(e.body, next, now()))).toBe(200);
  });

  it('a malformed Standard Webhooks key or a missing Secret key is not Ready and writes nothing; fixed, it converges', async () => {
    await apply(
      conn,
      ns,
      `${secretYaml('standard-signing', { key: 'not-a-whsec-key' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: standard}
spec:
  source: op-standard
  verification: ${verificationYaml(standard, 'standard-signing', ['key', 'absent'])}
`,
    );
    const bad = await eventually(
      async () => {
        const o = await customObjects(conn).get('InboundCredential', ns, 'standard');
        return ready(o)?.status === 'False' ? o : undefined;
      },
      { what: 'standard not Ready' },
    );
    expect(ready(bad)).toMatchObject({ reason: 'InvalidSecret' });
    expect(ready(bad)?.message).toMatch(/verification\.secretRefs\[0\]: a Standard Webhooks key must be whsec_/);
    expect(ready(bad)?.message).not.toContain('not-a-whsec-key');
    expect(await tdb.db('webhook_inbound_credential').where({ source: 'op-standard' }).first()).toBeUndefined();

    await apply(conn, ns, secretYaml('standard-signing', { key: standard.secret }));
    const missing = await eventually(
      async () => {
        const o = await customObjects(conn).get('InboundCredential', ns, 'standard');
        return ready(o)?.reason === 'SecretKeyNotFound' ? o : undefined;
      },
      { what: 'the missing key reported' },
    );
    expect(ready(missing)?.message).toMatch(/verification\.secretRefs\[1\]: Secret .*standard-signing has no key "absent"/);

    const other = whsec();
    await apply(conn, ns, secretYaml('standard-signing', { key: standard.secret, absent: other }));
    await eventually(async () => ready(await customObjects(conn).get('InboundCredential', ns, 'standard'))?.status === 'True', {
      what: 'standard Ready',
    });
    const e = standard.event(7);
    expect(await send('op-standard', e.body, await standard.sign(e.body, other, now()))).toBe(200);
  });
});
