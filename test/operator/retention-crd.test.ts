import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../support/kube.js';
import { apply, applyRefused, customObjects } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { type TestDatabase } from '../support/db.js';

// InboundCredential spec.retention: a source's own retention ages, checked by the CRD on a real
// kube-apiserver and written to the credential's row by the operator.

const credential = (name: string, retention: string) => `apiVersion: v1
kind: Secret
metadata: {name: ${name}-inbound}
stringData: {password: pa55word}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: ${name}}
spec:
  source: ${name}
  username: sender
  passwordSecretRef: {name: ${name}-inbound, key: password}
  retention: ${retention}
`;

describe('InboundCredential spec.retention against kube-apiserver and the operator', () => {
  let conn: KubeConnection;
  let ns: string;
  let tdb: TestDatabase;
  let scene: OperatorScene;

  beforeAll(async () => {
    scene = await startOperatorScene('retention');
    ({ conn, tdb, ns } = scene);
  });
  afterAll(async () => {
    await scene?.close();
  });

  it.each([
    { retention: '{maxAge: 3 months}', message: /spec.retention.maxAge in body should match/ },
    { retention: '{payloadMaxAge: 0d}', message: /spec.retention.payloadMaxAge in body should match/ },
    { retention: '{maxAge: 1d12h}', message: /should match/ },
    { retention: '{maxAge: 7d, payloadMaxAge: 30d}', message: /retention.payloadMaxAge must be shorter than retention.maxAge/ },
    { retention: '{maxAge: 36h, payloadMaxAge: 2d}', message: /retention.payloadMaxAge must be shorter than retention.maxAge/ },
    { retention: '{keepFor: 7d}', message: /unknown field "spec.retention.keepFor"/ },
  ])('refuses retention $retention with a message naming it', async ({ retention, message }) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    expect(await applyRefused(conn, ns, credential(name, retention))).toMatch(message);
    expect(await customObjects(conn).get('InboundCredential', ns, name)).toBeUndefined();
  });

  it("accepts ages and forever, and the operator writes them (in seconds, 0 = forever) to the source's row", async () => {
    await apply(conn, ns, credential('chatty', '{maxAge: 2d, payloadMaxAge: 36h}'));
    await apply(conn, ns, credential('audit', '{maxAge: forever}'));
    await apply(conn, ns, credential('pii', '{payloadMaxAge: 30m}'));
    interface Ages {
      retention_max_age_seconds: number | null;
      retention_payload_max_age_seconds: number | null;
    }
    const row = (source: string) =>
      eventually(
        async () =>
          (await tdb
            .db('webhook_inbound_credential')
            .where({ source })
            .first('retention_max_age_seconds', 'retention_payload_max_age_seconds')) as Ages | undefined,
      );
    expect(await row('chatty')).toEqual({ retention_max_age_seconds: 2 * 86_400, retention_payload_max_age_seconds: 36 * 3600 });
    expect(await row('audit')).toEqual({ retention_max_age_seconds: 0, retention_payload_max_age_seconds: null });
    expect(await row('pii')).toEqual({ retention_max_age_seconds: null, retention_payload_max_age_seconds: 1800 });

    // a change of the ages alone reaches the row; removing them returns the source to the global ages
    await apply(conn, ns, credential('chatty', '{maxAge: 3d}'));
    await eventually(async () => {
      const r = await row('chatty');
      return r.retention_max_age_seconds === 3 * 86_400 && r.retention_payload_max_age_seconds === null;
    });
    await apply(conn, ns, credential('chatty', '{}'));
    await eventually(async () => (await row('chatty')).retention_max_age_seconds === null);
  });
});
