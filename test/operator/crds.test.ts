import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderCrdFiles } from '../../src/operator/crd.js';
import { kubectl, type KubeConnection } from '../support/kube.js';
import { apply, applyRefused, customObjects, settled, type TestOperator } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { type TestDatabase } from '../support/db.js';
import { CREDENTIAL_RULE_BREAKS, VALID_CREDENTIAL_SPECS } from '../support/credential-specs.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('generated CRDs', () => {
  it('the committed crds/*.yaml are what scripts/kube/gen-crds.ts generates from src/custom-resources/specs.ts', async () => {
    const files = renderCrdFiles();
    expect(files.map((f) => f.file).sort()).toEqual([
      'webhookfanout.io_inboundcredentials.yaml',
      'webhookfanout.io_webhookendpoints.yaml',
      'webhookfanout.io_webhookreplays.yaml',
    ]);
    for (const { file, text } of files) {
      expect(await readFile(path.join(ROOT, 'crds', file), 'utf8'), `crds/${file} is stale: run npx tsx scripts/kube/gen-crds.ts`).toBe(
        text,
      );
    }
  });

  it('carry the schema of src/custom-resources/specs.ts: defaults, bounds, enums, status subresource, names', () => {
    const [endpoint, credential] = renderCrdFiles().map((f) => parse(f.text) as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any
    const v = endpoint!.spec.versions[0];
    const spec = v.schema.openAPIV3Schema.properties.spec;
    expect(endpoint!.spec.names).toMatchObject({ kind: 'WebhookEndpoint', shortNames: ['whe'] });
    expect(credential!.spec.names).toMatchObject({ kind: 'InboundCredential', shortNames: ['ic'] });
    expect(v.subresources).toEqual({ status: {} });
    // url is required for HTTP only (a CEL rule beside spec.destination)
    expect(spec.required).toEqual(['source']);
    expect(spec.properties.method).toEqual({
      type: 'string',
      enum: ['POST', 'PUT', 'PATCH'],
      default: 'POST',
      description: 'HTTP method of the outbound request',
    });
    expect(spec.properties.maxAttempts).toMatchObject({ type: 'integer', minimum: 1, maximum: 50, default: 5 });
    expect(spec.properties.timeoutSeconds).toMatchObject({ type: 'integer', minimum: 1, maximum: 120, default: 10 });
    expect(spec.properties.auth.properties.type).toMatchObject({
      // the PascalCase spellings, then the older ones, still accepted (docs/operator.md, Conventions)
      enum: [
        'None',
        'Basic',
        'Bearer',
        'OAuth2ClientCredentials',
        'HMAC',
        'StandardWebhooks',
        'NONE',
        'BASIC',
        'BEARER',
        'STANDARD_WEBHOOKS',
      ],
      default: 'NONE',
    });
    expect(spec.properties.customHeaders.additionalProperties).toEqual({ type: 'string', maxLength: 4096 });
    expect(JSON.stringify(spec)).not.toContain('"additionalProperties":false');
  });
});

describe('against kube-apiserver', () => {
  let conn: KubeConnection;
  let ns: string;
  let tdb: TestDatabase;
  let op: TestOperator;
  let scene: OperatorScene;

  beforeAll(async () => {
    scene = await startOperatorScene('crd');
    ({ conn, tdb, ns, op } = scene);
  });
  afterAll(async () => {
    await scene?.close();
  });

  it('accepts the CRDs with kubectl apply (structural schemas, CEL rules that compile within the cost budget)', async () => {
    const out = await kubectl(conn, ['apply', '--server-side', '--force-conflicts', '-f', path.join(ROOT, 'charts/webhook-fanout/crds')]);
    expect(out).toMatch(/webhookendpoints\.webhookfanout\.io serverside-applied/);
    const crd = JSON.parse(await kubectl(conn, ['get', 'crd', 'webhookendpoints.webhookfanout.io', '-o', 'json'])) as {
      status: { conditions: { type: string; status: string }[] };
    };
    expect(crd.status.conditions).toEqual(
      expect.arrayContaining([
        {
          type: 'Established',
          status: 'True',
          reason: expect.any(String),
          message: expect.any(String),
          lastTransitionTime: expect.any(String),
        },
        expect.objectContaining({ type: 'NamesAccepted', status: 'True' }),
      ]),
    );
    expect(crd.status.conditions.find((c) => c.type === 'NonStructuralSchema')).toBeUndefined();
    // the short names and the category resolve
    const resources = await kubectl(conn, ['api-resources', '--api-group=webhookfanout.io', '-o', 'wide']);
    expect(resources).toMatch(/webhookendpoints\s+whe\s+webhookfanout\.io\/v1alpha1\s+true\s+WebhookEndpoint\s+.*webhookfanout/);
    expect(resources).toMatch(/inboundcredentials\s+ic\s+webhookfanout\.io\/v1alpha1\s+true\s+InboundCredential/);
    await kubectl(conn, ['get', 'whe,ic', '-n', ns]);
    await kubectl(conn, ['get', 'webhookfanout', '-n', ns]);
  });

  it('applies the defaults of the schema', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: defaults}\nspec: {source: s, url: "http://x.example/h", auth: {}}\n`,
    );
    const o = await customObjects(conn).get('WebhookEndpoint', ns, 'defaults');
    expect(o?.spec).toEqual({
      source: 's',
      url: 'http://x.example/h',
      method: 'POST',
      maxAttempts: 5,
      timeoutSeconds: 10,
      active: true,
      propagateTraceContext: true,
      format: 'Raw',
      auth: { type: 'NONE' },
    });
  });

  const rejected: [string, string, RegExp][] = [
    [
      'BASIC without a username',
      `spec: {source: s, url: "http://x/h", auth: {type: BASIC, secretRef: {name: a, key: b}}}`,
      /auth\.username is required when auth\.type is BASIC/,
    ],
    [
      'BASIC without a secretRef',
      `spec: {source: s, url: "http://x/h", auth: {type: BASIC, username: u}}`,
      /auth\.secretRef is required when auth\.type is BASIC, BEARER, HMAC or STANDARD_WEBHOOKS/,
    ],
    [
      'STANDARD_WEBHOOKS without a secretRef',
      `spec: {source: s, url: "http://x/h", auth: {type: STANDARD_WEBHOOKS}}`,
      /auth\.secretRef is required/,
    ],
    [
      'a previousSecretRef with HMAC',
      `spec: {source: s, url: "http://x/h", auth: {type: HMAC, secretRef: {name: a, key: b}, previousSecretRef: {name: a, key: c}}}`,
      /auth\.previousSecretRef is only used with auth\.type STANDARD_WEBHOOKS/,
    ],
    ['BEARER without a secretRef', `spec: {source: s, url: "http://x/h", auth: {type: BEARER}}`, /auth\.secretRef is required/],
    ['HMAC without a secretRef', `spec: {source: s, url: "http://x/h", auth: {type: HMAC}}`, /auth\.secretRef is required/],
    ['an ftp url', `spec: {source: s, url: "ftp://files.example/x"}`, /spec\.url/],
    ['a url with user and password', `spec: {source: s, url: "http://u:pw@x/h"}`, /url must not contain credentials .*spec\.auth/],
    ['a url with a bare token', `spec: {source: s, url: "https://tok@x/h"}`, /url must not contain credentials/],
    ['a url with an @ in the password', `spec: {source: s, url: "http://u:p@x@y/h"}`, /url must not contain credentials/],
    ['a url with an empty username', `spec: {source: s, url: "http://:pw@x/h"}`, /url must not contain credentials/],
    [
      'an http url without a host',
      `spec: {source: s, url: "http:///nohost"}`,
      /url must be an absolute http:\/\/ or https:\/\/ URL with a host/,
    ],
    ['an unknown auth type', `spec: {source: s, url: "http://x/h", auth: {type: DIGEST}}`, /Unsupported value: "DIGEST"/],
    ['an unknown method', `spec: {source: s, url: "http://x/h", method: GET}`, /Unsupported value: "GET"/],
    [
      'maxAttempts 0',
      `spec: {source: s, url: "http://x/h", maxAttempts: 0}`,
      /spec\.maxAttempts: Invalid value: 0: spec\.maxAttempts in body should be greater than or equal to 1/,
    ],
    ['timeoutSeconds 121', `spec: {source: s, url: "http://x/h", timeoutSeconds: 121}`, /spec\.timeoutSeconds.*less than or equal to 120/],
    ['a bad source', `spec: {source: "-bad source", url: "http://x/h"}`, /spec\.source.*should match/],
    [
      'a header name that is not a token',
      `spec: {source: s, url: "http://x/h", customHeaders: {"Bad Header": v}}`,
      /customHeaders names must be HTTP header names/,
    ],
    ['a retryOnStatus outside 4xx', `spec: {source: s, url: "http://x/h", retryOnStatus: [503]}`, /less than or equal to 499/],
    ['a missing url', `spec: {source: s}`, /spec\.url: Required value/],
    [
      'a rate of zero',
      `spec: {source: s, url: "http://x/h", rateLimit: {perSecond: 0}}`,
      /rateLimit\.perSecond must be a positive number of deliveries per second/,
    ],
    [
      'a negative rate',
      `spec: {source: s, url: "http://x/h", rateLimit: {perSecond: -2}}`,
      /rateLimit\.perSecond must be a positive number/,
    ],
    ['a rateLimit without perSecond', `spec: {source: s, url: "http://x/h", rateLimit: {}}`, /spec\.rateLimit\.perSecond: Required value/],
    [
      'a maxConcurrency of 0',
      `spec: {source: s, url: "http://x/h", maxConcurrency: 0}`,
      /maxConcurrency must be a whole number of requests in flight, 1\.\.1000/,
    ],
    ['a fractional maxConcurrency', `spec: {source: s, url: "http://x/h", maxConcurrency: 1.5}`, /spec\.maxConcurrency/],
    // the PascalCase spellings obey the same rules as the older ones
    [
      'Basic without a username',
      `spec: {source: s, url: "http://x/h", auth: {type: Basic, secretRef: {name: a, key: b}}}`,
      /auth\.username is required when auth\.type is BASIC/,
    ],
    [
      'StandardWebhooks without a secretRef',
      `spec: {source: s, url: "http://x/h", auth: {type: StandardWebhooks}}`,
      /auth\.secretRef is required/,
    ],
    [
      'a previousSecretRef with Bearer',
      `spec: {source: s, url: "http://x/h", auth: {type: Bearer, secretRef: {name: a, key: b}, previousSecretRef: {name: a, key: c}}}`,
      /auth\.previousSecretRef is only used/,
    ],
    [
      'a signing in auth.type and in spec.signing',
      `spec: {source: s, url: "http://x/h", auth: {type: STANDARD_WEBHOOKS, secretRef: {name: a, key: b}}, signing: {type: HMAC, secretRef: {name: a, key: c}}}`,
      /spec\.signing and an auth\.type that signs/,
    ],
    ['a signing without a secretRef', `spec: {source: s, url: "http://x/h", signing: {type: HMAC}}`, /signing\.secretRef is required/],
    [
      'a previousSecretRef with an HMAC signing',
      `spec: {source: s, url: "http://x/h", signing: {type: HMAC, secretRef: {name: a, key: b}, previousSecretRef: {name: a, key: c}}}`,
      /signing\.previousSecretRef is only used with signing\.type StandardWebhooks/,
    ],
    ['a timeout of 3m', `spec: {source: s, url: "http://x/h", timeout: 3m}`, /timeout must be from 1s to 120s/],
    ['a timeout of 0s', `spec: {source: s, url: "http://x/h", timeout: 0s}`, /timeout must be from 1s to 120s/],
    ['a timeout without a unit', `spec: {source: s, url: "http://x/h", timeout: "30"}`, /spec\.timeout.*should match/],
    ['no url and no destination', `spec: {source: s}`, /url is required for an HTTP destination/],
    [
      'an SQS destination without its block',
      `spec: {source: s, destination: {type: SQS}}`,
      /destination\.sqs is required when destination\.type is SQS/,
    ],
    [
      "another type's block",
      `spec: {source: s, destination: {type: Kafka, kafka: {bootstrapServers: ["k:9092"], topic: t}, nats: {servers: ["nats://n:4222"], subject: s}}}`,
      /destination\.nats is only read when destination\.type is NATS/,
    ],
    [
      'a url beside a queue',
      `spec: {source: s, url: "http://x/h", destination: {type: SQS, sqs: {queueUrl: "https://q.example/1/q", region: eu-west-1}}}`,
      /url is only for an HTTP destination/,
    ],
    [
      'Bearer auth for Kafka',
      `spec: {source: s, auth: {type: Bearer, secretRef: {name: a, key: b}}, destination: {type: Kafka, kafka: {bootstrapServers: ["k:9092"], topic: t}}}`,
      /auth \(Basic, Bearer, OAuth2ClientCredentials\) is only for an HTTP destination/,
    ],
    [
      'OAuth2ClientCredentials without its oauth2 block',
      `spec: {source: s, url: "http://x/h", auth: {type: OAuth2ClientCredentials}}`,
      /auth\.oauth2 is required when auth\.type is OAuth2ClientCredentials/,
    ],
    [
      'an oauth2 block with Bearer',
      `spec: {source: s, url: "http://x/h", auth: {type: Bearer, secretRef: {name: a, key: b}, oauth2: {tokenUrl: "https://idp/t", clientId: c, clientSecretRef: {name: a, key: s}}}}`,
      /auth\.oauth2 is required when auth\.type is OAuth2ClientCredentials, and only read then/,
    ],
    [
      'PrivateKeyJwt without its private key',
      `spec: {source: s, url: "http://x/h", auth: {type: OAuth2ClientCredentials, oauth2: {tokenUrl: "https://idp/t", clientId: c, clientAuthentication: PrivateKeyJwt, clientSecretRef: {name: a, key: s}}}}`,
      /auth\.oauth2 needs clientSecretRef for ClientSecretBasic and ClientSecretPost, privateKeySecretRef/,
    ],
    [
      'a keyId without PrivateKeyJwt',
      `spec: {source: s, url: "http://x/h", auth: {type: OAuth2ClientCredentials, oauth2: {tokenUrl: "https://idp/t", clientId: c, clientSecretRef: {name: a, key: s}, keyId: k}}}`,
      /auth\.oauth2\.keyId is only used with clientAuthentication PrivateKeyJwt/,
    ],
    [
      'an OAuth2 token URL with credentials',
      `spec: {source: s, url: "http://x/h", auth: {type: OAuth2ClientCredentials, oauth2: {tokenUrl: "https://u:p@idp/t", clientId: c, clientSecretRef: {name: a, key: s}}}}`,
      /spec\.auth\.oauth2\.tokenUrl.*should match/,
    ],
    [
      'a RabbitMQ user without a password',
      `spec: {source: s, destination: {type: RabbitMQ, rabbitMQ: {url: "amqp://r:5672/", username: u}}}`,
      /rabbitMQ\.username and rabbitMQ\.passwordSecretRef go together/,
    ],
  ];

  it('accepts the PascalCase auth types and a timeout duration beside the defaulted timeoutSeconds', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: new-spellings}\nspec: {source: s, url: "http://x.example/h", timeout: 1m30s, auth: {type: StandardWebhooks, secretRef: {name: a, key: b}, previousSecretRef: {name: a, key: c}}}\n`,
    );
    const o = await customObjects(conn).get('WebhookEndpoint', ns, 'new-spellings');
    expect(o?.spec).toMatchObject({ timeout: '1m30s', timeoutSeconds: 10, auth: { type: 'StandardWebhooks' } });
  });

  it('accepts OAuth2 client credentials with each client authentication, defaulting to ClientSecretBasic', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: oauth2-basic}\nspec: {source: s, url: "https://api.partner.example/h", auth: {type: OAuth2ClientCredentials, oauth2: {tokenUrl: "https://idp.partner.example/oauth/token", clientId: c, clientSecretRef: {name: a, key: s}, scopes: [webhooks.write], audience: "https://api.partner.example"}}}\n` +
        `---\napiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: oauth2-jwt}\nspec: {source: s, url: "https://api.partner.example/h", auth: {type: OAuth2ClientCredentials, oauth2: {tokenUrl: "https://idp.partner.example/oauth/token", clientId: c, clientAuthentication: PrivateKeyJwt, privateKeySecretRef: {name: a, key: k}, keyId: k1}}}\n`,
    );
    const basic = await customObjects(conn).get('WebhookEndpoint', ns, 'oauth2-basic');
    expect(basic?.spec).toMatchObject({
      auth: { type: 'OAuth2ClientCredentials', oauth2: { clientAuthentication: 'ClientSecretBasic', scopes: ['webhooks.write'] } },
    });
    const jwt = await customObjects(conn).get('WebhookEndpoint', ns, 'oauth2-jwt');
    expect(jwt?.spec).toMatchObject({ auth: { oauth2: { clientAuthentication: 'PrivateKeyJwt', keyId: 'k1' } } });
  });

  it('accepts a Bearer auth and a Standard Webhooks signing together, and shows both with -o wide', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: token-and-signature}\nspec: {source: s, url: "http://x.example/h", auth: {type: Bearer, secretRef: {name: a, key: t}}, signing: {type: StandardWebhooks, secretRef: {name: a, key: k}, previousSecretRef: {name: a, key: p}}}\n`,
    );
    const o = await customObjects(conn).get('WebhookEndpoint', ns, 'token-and-signature');
    expect(o?.spec).toMatchObject({ auth: { type: 'Bearer' }, signing: { type: 'StandardWebhooks' } });
    const wide = await kubectl(conn, ['get', 'whe', 'token-and-signature', '-n', ns, '-o', 'wide']);
    expect(wide).toMatch(/AUTH\s+SIGNING/);
    expect(wide).toMatch(/token-and-signature\s+s\s+http:\/\/x\.example\/h\s+Bearer\s+StandardWebhooks\s/);
  });

  it('accepts an endpoint of each destination type (dry run), a signing with them', async () => {
    const destinations = [
      `url: "http://x.example/h", destination: {type: HTTP}`,
      `destination: {type: SQS, sqs: {queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/payments.fifo", region: eu-west-1, roleArn: "arn:aws:iam::123456789012:role/fanout"}}`,
      `destination: {type: SNS, sns: {topicArn: "arn:aws:sns:eu-west-1:123456789012:payments", region: eu-west-1, endpointUrl: "http://moto:5000"}}`,
      `destination: {type: EventBridge, eventBridge: {eventBusName: payments, region: eu-west-1, detailType: stripe}}`,
      `destination: {type: Kafka, kafka: {bootstrapServers: ["kafka-0.kafka:9092"], topic: payments.stripe, tls: {caBundleRef: {name: a, key: ca}}, sasl: {mechanism: SCRAM-SHA-512, username: u, passwordSecretRef: {name: a, key: p}}}}`,
      `destination: {type: RabbitMQ, rabbitMQ: {url: "amqps://rabbitmq:5671/%2F", exchange: payments, username: u, passwordSecretRef: {name: a, key: p}}}`,
      `destination: {type: NATS, nats: {servers: ["nats://nats:4222"], subject: payments.stripe, tokenSecretRef: {name: a, key: t}}}`,
    ];
    for (const [i, d] of destinations.entries()) {
      const yaml = `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: dest-${i}}\nspec: {source: s, signing: {type: HMAC, secretRef: {name: a, key: s}}, ${d}}\n`;
      await kubectl(conn, ['apply', '--dry-run=server', '-n', ns, '-f', '-'], { input: yaml });
    }
  });

  it('accepts limits, a fractional rate included, and shows them with -o wide', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: limited}\nspec: {source: s, url: "http://x.example/h", rateLimit: {perSecond: 0.5}, maxConcurrency: 4}\n`,
    );
    const o = await customObjects(conn).get('WebhookEndpoint', ns, 'limited');
    expect(o?.spec).toMatchObject({ rateLimit: { perSecond: 0.5 }, maxConcurrency: 4 });
    // the state is the operator's (status.state), written after the apply: under load, a moment later
    const wide = await eventually(async () => {
      const out = await kubectl(conn, ['get', 'whe', 'limited', '-n', ns, '-o', 'wide']);
      return /\bACTIVE\b/.test(out.split('\n')[1] ?? '') && out;
    }, 60_000);
    expect(wide).toMatch(/RATE\s+MAX IN FLIGHT/);
    expect(wide).toMatch(/limited\s+s\s+http:\/\/x\.example\/h\s+true\s+ACTIVE\s+0\.5\s+4\s/);
  });
  it.each(rejected)('rejects a WebhookEndpoint with %s, before anything reaches Postgres', async (_what, spec, message) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    const refusal = await applyRefused(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: ${name}}\n${spec}\n`,
    );
    expect(refusal).toMatch(message);
    expect(await customObjects(conn).get('WebhookEndpoint', ns, name)).toBeUndefined();
  });

  it('rejects an InboundCredential without a passwordSecretRef, or with an empty extraction rule (client-node create)', async () => {
    const crs = customObjects(conn);
    await expect(crs.create('InboundCredential', ns, 'no-secret', { source: 's', username: 'u' })).rejects.toMatchObject({ code: 422 });
    const err = await crs
      .create('InboundCredential', ns, 'empty-rule', {
        source: 's',
        username: 'u',
        passwordSecretRef: { name: 'a', key: 'b' },
        eventIdFrom: {},
      })
      .catch((e: unknown) => e as { code: number; body: string });
    expect(err).toMatchObject({ code: 422 });
    expect(String((err as { body: unknown }).body)).toContain('set jsonPath, header or both');
  });

  it.each(CREDENTIAL_RULE_BREAKS)('rejects an InboundCredential with %s, in the words dev mode uses', async (_what, spec, message) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    const err = await customObjects(conn)
      .create('InboundCredential', ns, name, spec)
      .then(
        () => undefined,
        (e: unknown) => e as { code: number; body: unknown },
      );
    expect(err).toMatchObject({ code: 422 });
    expect(String((err as { body: unknown }).body)).toMatch(message);
  });

  it('accepts every valid verification (dry run), and `kubectl get ic` shows the type, Basic when none is named', async () => {
    for (const [i, [, spec]] of VALID_CREDENTIAL_SPECS.entries()) {
      const yaml = `apiVersion: webhookfanout.io/v1alpha1\nkind: InboundCredential\nmetadata: {name: valid-${i}}\nspec: ${JSON.stringify(spec)}\n`;
      await kubectl(conn, ['apply', '--dry-run=server', '-n', ns, '-f', '-'], { input: yaml });
    }
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1\nkind: InboundCredential\nmetadata: {name: shown-basic}\nspec: {source: shown-basic, username: u, passwordSecretRef: {name: a, key: b}}\n---\napiVersion: webhookfanout.io/v1alpha1\nkind: InboundCredential\nmetadata: {name: shown-stripe}\nspec: {source: shown-stripe, verification: {type: Stripe, secretRefs: [{name: a, key: b}]}}\n`,
    );
    const table = await kubectl(conn, ['get', 'ic', '-n', ns]);
    expect(table).toMatch(/NAME\s+SOURCE\s+VERIFICATION\s+USERNAME\s+READY/);
    expect(table).toMatch(/shown-basic\s+shown-basic\s+Basic\s+u\s/);
    expect(table).toMatch(/shown-stripe\s+shown-stripe\s+Stripe\s+(<none>)?\s/);
    await kubectl(conn, ['delete', 'ic', 'shown-basic', 'shown-stripe', '-n', ns, '--wait=false']);
  });

  it('nothing rejected reached Postgres; the accepted resource did', async () => {
    await settled(op);
    const o = await eventually(async () => {
      const r = await customObjects(conn).get('WebhookEndpoint', ns, 'defaults');
      return r?.status?.endpointId ? r : undefined;
    });
    await eventually(async () => (await customObjects(conn).get('WebhookEndpoint', ns, 'limited'))?.status?.endpointId);
    const rows = await tdb.db('webhook_endpoint').select('name', 'rate_limit_per_second', 'max_concurrency').orderBy('name');
    expect(rows).toEqual([
      { name: `${ns}/defaults`, rate_limit_per_second: null, max_concurrency: null },
      { name: `${ns}/limited`, rate_limit_per_second: 0.5, max_concurrency: 4 },
    ]);
    expect(await tdb.db('webhook_inbound_credential').count('* as n')).toEqual([{ n: 0 }]);
    expect(o.status?.endpointId).toBeDefined();
  });
});
