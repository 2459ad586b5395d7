import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import { type OperatorStore } from '../../src/operator/store.js';
import { addEvent, deliveryOf, startFanoutHarness, type FanoutHarness } from '../fanout/support/harness.js';
import type { KubeConnection } from '../support/kube.js';
import { kubectl } from '../support/kube.js';
import { apply, customObjects, ready, secretYaml, whenReady } from '../support/kube-shared.js';
import { ownSource, startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';

/**
 * An OAuth2 endpoint whose token endpoint refuses its client credentials, through the whole path:
 * a real kube-apiserver and the operator, a real Temporal worker on the same Postgres, the test
 * identity provider and a receiver. The worker's delivery waits (no attempt spent) and writes the
 * refusal on the row; the operator's health poll makes the resource Ready=False
 * TokenRequestRefused with the server's words (never the secret) and a Warning Event; the Secret
 * fixed, the operator writes the new secret (clearing the refusal), the resource is Ready again
 * and the waiting delivery reaches the receiver with a token.
 */
const SECRET = `right-${randomUUID()}`;
const WRONG = `wrong-${randomUUID()}`;
let conn: KubeConnection;
let store: OperatorStore;
let ns: string;
let scene: OperatorScene;
let fanout: FanoutHarness;
let idp: IdentityProvider;
let receiver: Receiver;

beforeAll(async () => {
  [scene, receiver, idp] = await Promise.all([
    startOperatorScene('oauth2', { operator: { healthPollMs: 200 } }),
    startReceiver([{ status: 204, body: '' }]),
    startIdentityProvider({
      audience: 'https://api.partner.example',
      clients: [
        { clientId: 'partner', clientSecret: SECRET, permissions: ['read:webhooks'], tokenEndpointAuthMethod: 'client_secret_basic' },
      ],
    }),
  ]);
  ({ conn, store, ns } = scene);
  await ownSource(store.repos, 'oauth2-partner', ns);
  fanout = await startFanoutHarness({ database: scene.tdb });
});

afterAll(async () => {
  await fanout?.close();
  await Promise.all([receiver?.close(), idp?.close()]);
  await scene?.close();
});

const endpointYaml = () => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: partner
spec:
  source: oauth2-partner
  url: ${receiver.url}
  maxAttempts: 1
  autoDisable: {afterConsecutiveFailures: 1}
  auth:
    type: OAuth2ClientCredentials
    oauth2:
      tokenUrl: ${idp.url}/oauth/token
      clientId: partner
      clientSecretRef: { name: partner-oauth, key: client-secret }
      audience: https://api.partner.example
`;

describe('WebhookEndpoint OAuth2: credentials the token endpoint refuses', () => {
  it('Ready=False TokenRequestRefused while the delivery waits; the Secret fixed, Ready again and the delivery goes', async () => {
    await apply(conn, ns, `${secretYaml('partner-oauth', { 'client-secret': WRONG })}---\n${endpointYaml()}`);
    const crs = customObjects(conn);
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'partner');
    const row = await store.endpointByUid(cr.metadata.uid);
    const endpointId = row!.id;

    const eventId = await addEvent(fanout.repos, { source: 'oauth2-partner' });
    await fanout.start(eventId);
    const refused = await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'partner');
        return ready(o)?.reason === 'TokenRequestRefused' ? o : undefined;
      },
      { what: 'Ready=False TokenRequestRefused' },
    );
    expect(ready(refused)).toMatchObject({ status: 'False', reason: 'TokenRequestRefused' });
    expect(ready(refused)?.message).toMatch(
      /the token endpoint refuses the client credentials: oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client/,
    );
    expect(ready(refused)?.message).not.toContain(WRONG);
    expect(refused.status?.state).toBe('ACTIVE');
    const events = await eventually(
      async () => {
        const e = JSON.parse(
          await kubectl(conn, [
            'get',
            'events',
            '-n',
            ns,
            '--field-selector',
            'involvedObject.name=partner,reason=TokenRequestRefused',
            '-o',
            'json',
          ]),
        ) as { items: { type: string; message: string }[] };
        return e.items.length > 0 ? e.items : undefined;
      },
      { what: 'a Warning Event TokenRequestRefused' },
    );
    expect(events[0]?.type).toBe('Warning');
    expect(JSON.stringify(events)).not.toContain(WRONG);
    // waiting, not failed: no attempt spent, nothing towards auto-disable (after 1), nothing sent
    expect(await deliveryOf(fanout.repos, eventId, endpointId)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({ consecutiveFailures: 0, disabledAt: null });
    expect(receiver.requests).toHaveLength(0);

    // the Secret fixed: the operator writes the row, the resource is Ready, the delivery goes
    await apply(conn, ns, secretYaml('partner-oauth', { 'client-secret': SECRET }));
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'partner'))?.status === 'True', { what: 'Ready again' });
    expect(await fanout.client.workflow.getHandle(eventId).result()).toBe('COMPLETED');
    expect(await deliveryOf(fanout.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(receiver.requests).toHaveLength(1);
    expect(String(receiver.requests[0]?.headers.authorization)).toMatch(/^Bearer ey/);
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({ tokenRefusal: null });
  });
});
