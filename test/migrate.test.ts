import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { migrateLatest } from '../src/db/migrate.js';
import { fileDatabase, refusal } from './support/db.js';
import { endpointSpec, OAUTH2_CLIENT, oauth2EndpointSpec } from './support/process-stack.js';

describe('migration 052', () => {
  const t = fileDatabase();

  it('creates the tables, is recorded, and is idempotent', async () => {
    const tables = await t.database.db.raw<{ rows: Array<{ table_name: string }> }>(
      `select table_name from information_schema.tables where table_schema = 'public' and table_name like 'webhook_%' order by 1`,
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      'webhook_bulk_replay',
      'webhook_delivery',
      'webhook_delivery_attempt',
      'webhook_endpoint',
      'webhook_endpoint_lease',
      'webhook_endpoint_limit_state',
      'webhook_event',
      'webhook_inbound_credential',
      'webhook_proven_address',
      'webhook_replay',
      'webhook_replay_delivery',
    ]);
    // every .sql file of migrations/, in name order, starting with 052
    const files = (await readdir(new URL('../migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();
    expect(files[0]).toBe('052-add-webhook-fanout-tables.sql');
    const recorded = await t.database.db('knex_migrations').select('name').orderBy('id');
    expect(recorded.map((r: { name: string }) => r.name)).toEqual(files);
    expect(await migrateLatest(t.database.db)).toEqual([]);
  });

  it('rejects statuses, auth types and methods outside the allowed sets', async () => {
    expect(await refusal(t.database.db('webhook_event').insert({ source: 's', payload: Buffer.from('{}'), status: 'DONE' }))).toMatch(
      /^check_violation: .*webhook_event_status_chk/s,
    );
    expect(
      await refusal(t.database.db('webhook_endpoint').insert({ name: 'e', source: 's', url: 'http://x', auth_type: 'DIGEST' })),
    ).toMatch(/^check_violation: .*webhook_endpoint_auth_type_chk/s);
    expect(await refusal(t.database.db('webhook_endpoint').insert({ name: 'e', source: 's', url: 'http://x', method: 'GET' }))).toMatch(
      /^check_violation: .*webhook_endpoint_method_chk/s,
    );
    expect(await refusal(t.database.db('webhook_endpoint').insert({ name: 'e', source: 's', url: 'http://x', auth_type: 'HMAC' }))).toMatch(
      /^check_violation: .*webhook_endpoint_hmac_chk/s,
    );
  });

  it('allows one event per (source, external id) but any number without an external id', async () => {
    const ev = { source: 'stripe', payload: Buffer.from('{}') };
    await t.database.db('webhook_event').insert({ ...ev, external_event_id: 'evt_1' });
    expect(await refusal(t.database.db('webhook_event').insert({ ...ev, external_event_id: 'evt_1' }))).toMatch(
      /^unique_violation: .*webhook_event_source_external_id_uq/s,
    );
    await t.database.db('webhook_event').insert({ ...ev, source: 'github', external_event_id: 'evt_1' });
    await t.database.db('webhook_event').insert(ev);
    await t.database.db('webhook_event').insert(ev);
    const rows = await t.database.db('webhook_event').where({ source: 'stripe' }).count({ n: '*' });
    expect(Number(rows[0]?.n)).toBe(3);
  });
});

describe('migration 052 check constraints survive knex', () => {
  const t = fileDatabase();

  it('accepts http and https endpoint URLs and refuses other schemes', async () => {
    const base = { name: 'e', source: 's' };
    await t.database.db('webhook_endpoint').insert({ ...base, url: 'http://receiver.svc:8080/hook' });
    await t.database.db('webhook_endpoint').insert({ ...base, url: 'https://example.com/hook' });
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, url: 'ftp://example.com' }))).toMatch(
      /^check_violation: .*webhook_endpoint_url_chk/s,
    );
  });
});

describe('migration 053: STANDARD_WEBHOOKS', () => {
  const t = fileDatabase();

  const key = `whsec_${Buffer.from('a-key-of-at-least-16-bytes').toString('base64')}`;
  const base = { name: 'e', source: 's', url: 'http://x/h' };

  it('accepts a whsec_ key and a previous key for STANDARD_WEBHOOKS', async () => {
    await t.database
      .db('webhook_endpoint')
      .insert({ ...base, auth_type: 'STANDARD_WEBHOOKS', signing_secret: key, previous_signing_secret: key });
  });

  it.each([
    ['no key', { auth_type: 'STANDARD_WEBHOOKS' }, /webhook_endpoint_standard_webhooks_chk/],
    ['a key without whsec_', { auth_type: 'STANDARD_WEBHOOKS', signing_secret: 'plain' }, /webhook_endpoint_standard_webhooks_chk/],
    [
      'a previous key with HMAC',
      { auth_type: 'HMAC', signing_secret: 'k', previous_signing_secret: key },
      /webhook_endpoint_previous_secret_chk/,
    ],
  ])('refuses %s', async (_what, row, constraint) => {
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, ...row }))).toMatch(constraint);
  });
});

describe('migration 055: endpoint health', () => {
  const t = fileDatabase();

  const base = { name: 'e', source: 's', url: 'http://x/h' };

  it('an existing or new endpoint is never auto-disabled unless it asks: threshold 0, count 0, not disabled', async () => {
    const [row] = (await t.database.db('webhook_endpoint').insert(base).returning('*')) as Array<Record<string, unknown>>;
    expect(row).toMatchObject({ auto_disable_after: 0, consecutive_failures: 0, disabled_at: null, enable_annotation: null });
  });

  it.each([
    ['a negative threshold', { auto_disable_after: -1 }, /webhook_endpoint_auto_disable_after_chk/],
    ['a negative count', { consecutive_failures: -1 }, /webhook_endpoint_consecutive_failures_chk/],
  ])('refuses %s', async (_what, row, constraint) => {
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, ...row }))).toMatch(constraint);
  });
});

describe('migration 056: endpoint limits', () => {
  const t = fileDatabase();

  const base = { name: 'e', source: 's', url: 'http://x/h' };

  it('accepts the bounds and no limit at all', async () => {
    await t.database.db('webhook_endpoint').insert({ ...base, rate_limit_per_second: 0.001, max_concurrency: 1 });
    await t.database.db('webhook_endpoint').insert({ ...base, rate_limit_per_second: 10_000, max_concurrency: 1_000 });
    await t.database.db('webhook_endpoint').insert(base);
  });

  it.each([
    ['a rate of zero', { rate_limit_per_second: 0 }, /webhook_endpoint_rate_limit_chk/],
    ['a negative rate', { rate_limit_per_second: -1 }, /webhook_endpoint_rate_limit_chk/],
    ['no concurrency', { max_concurrency: 0 }, /webhook_endpoint_max_concurrency_chk/],
  ])('refuses %s', async (_what, row, constraint) => {
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, ...row }))).toMatch(constraint);
  });
});

describe('migration 078: signing apart from auth', () => {
  const t = fileDatabase();

  const key = `whsec_${Buffer.from('a-key-of-at-least-16-bytes').toString('base64')}`;
  const base = { name: 'e', source: 's', url: 'http://x/h' };
  const read = async (id: string) => {
    const e = await t.repos.endpoints.get(id);
    return e && { authType: e.authType, signingType: e.signingType };
  };

  it('a row the release before wrote (auth_type HMAC, no signing_type) reads as HMAC signing and no auth', async () => {
    const [row] = (await t.database
      .db('webhook_endpoint')
      .insert({ ...base, auth_type: 'HMAC', signing_secret: 'k' })
      .returning(['id', 'signing_type'])) as Array<{ id: string; signing_type: string }>;
    expect(row?.signing_type).toBe('NONE');
    expect(await read(row!.id)).toEqual({ authType: 'NONE', signingType: 'HMAC' });
  });

  it.each([
    [
      'a signing and no auth: auth_type says the signing too, as the release before reads it',
      'NONE',
      'STANDARD_WEBHOOKS',
      'STANDARD_WEBHOOKS',
    ],
    ['Bearer and HMAC: auth_type the auth, signing_type the signing', 'BEARER', 'HMAC', 'BEARER'],
    ['neither', 'NONE', 'NONE', 'NONE'],
  ] as const)('%s', async (_what, authType, signingType, storedAuthType) => {
    const e = await t.repos.endpoints.upsertByResourceUid(
      `uid-${authType}-${signingType}`,
      endpointSpec('e', 'http://x/h', {
        authType,
        authSecret: authType === 'NONE' ? null : 'token',
        signingType,
        signingSecret: signingType === 'NONE' ? null : key,
      }),
    );
    expect({ authType: e.authType, signingType: e.signingType }).toEqual({ authType, signingType });
    const stored = await t.database.db('webhook_endpoint').where({ id: e.id }).first('auth_type', 'signing_type');
    expect(stored).toEqual({ auth_type: storedAuthType, signing_type: signingType });
  });

  it.each([
    ['an unknown signing type', { signing_type: 'RSA', signing_secret: 'k' }, /webhook_endpoint_signing_type_chk/],
    ['a signing without its secret', { signing_type: 'HMAC' }, /webhook_endpoint_signing_secret_chk/],
    [
      'a Standard Webhooks signing without a whsec_ key',
      { auth_type: 'BEARER', auth_secret: 't', signing_type: 'STANDARD_WEBHOOKS', signing_secret: 'plain' },
      /webhook_endpoint_standard_webhooks_chk/,
    ],
    [
      'a previous key with an HMAC signing',
      { signing_type: 'HMAC', signing_secret: 'k', previous_signing_secret: key },
      /webhook_endpoint_previous_secret_chk/,
    ],
  ])('refuses %s', async (_what, row, constraint) => {
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, ...row }))).toMatch(constraint);
  });
});

describe('migration 082: Standard Webhooks Ed25519 signing', () => {
  const t = fileDatabase();

  const sk = `whsk_${Buffer.alloc(32, 1).toString('base64')}`;
  const pk = `whpk_${Buffer.alloc(32, 2).toString('base64')}`;
  const base = { name: 'e', source: 's', url: 'http://x/h', signing_type: 'STANDARD_WEBHOOKS_ED25519' };

  it('accepts a whsk_ key with its public key, and a previous key during a rotation', async () => {
    await t.database.db('webhook_endpoint').insert({ ...base, signing_secret: sk, signing_public_keys: [pk] });
    await t.database
      .db('webhook_endpoint')
      .insert({ ...base, signing_secret: sk, previous_signing_secret: sk, signing_public_keys: [pk, pk] });
  });

  it('an existing endpoint has no public keys', async () => {
    const [row] = (await t.database.db('webhook_endpoint').insert({ name: 'e', source: 's', url: 'http://x/h' }).returning('*')) as Array<
      Record<string, unknown>
    >;
    expect(row?.signing_public_keys).toEqual([]);
  });

  it.each([
    [
      'a whsec_ key',
      { signing_secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`, signing_public_keys: [pk] },
      /webhook_endpoint_ed25519_chk/,
    ],
    [
      'a seed that is not 32 bytes',
      { signing_secret: `whsk_${Buffer.alloc(24, 1).toString('base64')}`, signing_public_keys: [pk] },
      /webhook_endpoint_ed25519_chk/,
    ],
    ['no public key', { signing_secret: sk }, /webhook_endpoint_ed25519_chk/],
    [
      'a whsec_ previous key',
      { signing_secret: sk, signing_public_keys: [pk], previous_signing_secret: `whsec_${Buffer.alloc(24, 1).toString('base64')}` },
      /webhook_endpoint_previous_secret_chk/,
    ],
  ])('refuses %s', async (_what, row, constraint) => {
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, ...row }))).toMatch(constraint);
  });
});

describe('migration 083: an endpoint destination', () => {
  const t = fileDatabase();
  const base = { name: 'e', source: 's' };

  it('an HTTP row keeps its http(s) url; another destination keeps its address there; the secrets stay apart', async () => {
    // HTTP (no destination): the url check as before
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, url: 'arn:aws:sns:eu-west-1:123456789012:t' }))).toMatch(
      /^check_violation: .*webhook_endpoint_url_chk/s,
    );
    const destination = {
      type: 'SNS',
      topicArn: 'arn:aws:sns:eu-west-1:123456789012:t',
      region: 'eu-west-1',
      endpointUrl: null,
      roleArn: null,
    };
    const row = await t.repos.endpoints.upsertByResourceUid(
      'test:sns',
      endpointSpec('sns', destination.topicArn, { destination: destination as never }),
    );
    expect(await t.repos.endpoints.get(row.id)).toMatchObject({ url: destination.topicArn, destination, destinationSecrets: {} });
    const kafka = await t.repos.endpoints.upsertByResourceUid(
      'test:kafka',
      endpointSpec('kafka', 'kafka://k:9092/t', {
        destination: { type: 'Kafka', bootstrapServers: ['k:9092'], topic: 't', tls: null, sasl: { mechanism: 'PLAIN', username: 'u' } },
        destinationSecrets: { password: 'pw' },
      }),
    );
    expect(await t.repos.endpoints.get(kafka.id)).toMatchObject({ destination: { type: 'Kafka' }, destinationSecrets: { password: 'pw' } });
    // a row written before: HTTP
    const [old] = (await t.database
      .db('webhook_endpoint')
      .insert({ ...base, name: 'old', url: 'http://x/h' })
      .returning('id')) as Array<{ id: string }>;
    expect(await t.repos.endpoints.get(old!.id)).toMatchObject({ destination: { type: 'HTTP' }, destinationSecrets: {} });
  });
});

describe('migration 085: OAuth2 client credentials', () => {
  const t = fileDatabase();
  const base = { name: 'e', source: 's', url: 'http://x/h' };
  const oauth2 = {
    tokenUrl: 'https://idp.example/oauth/token',
    clientId: 'c',
    scopes: ['a'],
    audience: null,
    clientAuthentication: 'ClientSecretPost' as const,
    keyId: null,
  };

  it('keeps the client in auth_oauth2 and the secret in auth_secret; a row written before has none', async () => {
    const row = await t.repos.endpoints.upsertByResourceUid(
      'test:oauth2',
      endpointSpec('oauth2', 'http://x/h', { authType: 'OAUTH2_CLIENT_CREDENTIALS', authSecret: 's', authOAuth2: oauth2 }),
    );
    expect(await t.repos.endpoints.get(row.id)).toMatchObject({
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: 's',
      authOAuth2: oauth2,
    });
    const [old] = (await t.database.db('webhook_endpoint').insert(base).returning('id')) as Array<{ id: string }>;
    expect(await t.repos.endpoints.get(old!.id)).toMatchObject({ authType: 'NONE', authOAuth2: null });
  });

  it.each([
    ['OAuth2 without its client', { auth_type: 'OAUTH2_CLIENT_CREDENTIALS', auth_secret: 's' }],
    ['OAuth2 without its secret', { auth_type: 'OAUTH2_CLIENT_CREDENTIALS', auth_oauth2: JSON.stringify(oauth2) }],
    ['a client beside Bearer', { auth_type: 'BEARER', auth_secret: 't', auth_oauth2: JSON.stringify(oauth2) }],
  ])('refuses %s', async (_what, row) => {
    expect(await refusal(t.database.db('webhook_endpoint').insert({ ...base, ...row }))).toMatch(/webhook_endpoint_oauth2_chk/);
  });
});

describe('migration 089: an OAuth2 endpoint whose credentials the token endpoint refuses', () => {
  const t = fileDatabase();
  const spec = (secret: string, over: object = {}) => oauth2EndpointSpec('refused', secret, over);
  const words = 'oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client';

  it('the worker writes it for the secret it used; the operator writing the same row keeps it, another secret clears it', async () => {
    const row = await t.repos.endpoints.upsertByResourceUid('test:refused', spec('wrong'));
    expect(row.tokenRefusal).toBeNull();
    await t.repos.endpoints.recordTokenRefusal(row, words);
    const refused = await t.repos.endpoints.get(row.id);
    expect(refused?.tokenRefusal).toMatchObject({ message: words, at: expect.any(Date) });
    expect(await t.repos.endpoints.tokenRefusedResourceUids()).toContain('test:refused');
    // a change elsewhere in the spec: still refused
    await t.repos.endpoints.upsertByResourceUid('test:refused', spec('wrong', { maxAttempts: 9 }));
    expect((await t.repos.endpoints.get(row.id))?.tokenRefusal?.message).toBe(words);
    // the Secret fixed: cleared in the same write
    await t.repos.endpoints.upsertByResourceUid('test:refused', spec('right'));
    expect((await t.repos.endpoints.get(row.id))?.tokenRefusal).toBeNull();
    expect(await t.repos.endpoints.tokenRefusedResourceUids()).not.toContain('test:refused');
    // a refusal of the old secret that comes late is not written over the fixed one
    await t.repos.endpoints.recordTokenRefusal(row, words);
    expect((await t.repos.endpoints.get(row.id))?.tokenRefusal).toBeNull();
    // the worker got a token: cleared
    await t.repos.endpoints.recordTokenRefusal({ ...row, authSecret: 'right' }, words);
    expect((await t.repos.endpoints.get(row.id))?.tokenRefusal?.message).toBe(words);
    await t.repos.endpoints.clearTokenFailures({ ...row, authSecret: 'right' });
    expect((await t.repos.endpoints.get(row.id))?.tokenRefusal).toBeNull();
  });

  it('refuses a refusal without its time', async () => {
    expect(
      await refusal(t.database.db('webhook_endpoint').insert({ name: 'e', source: 's', url: 'http://x/h', oauth2_token_refusal: 'x' })),
    ).toMatch(/webhook_endpoint_token_refusal_chk/);
  });
});

describe('migration 092: an OAuth2 endpoint whose token endpoint is unavailable', () => {
  const t = fileDatabase();
  const spec = (secret: string, over: object = {}) => oauth2EndpointSpec('unavailable', secret, over);
  const down = 'oauth2_token_unavailable: the token endpoint answered HTTP 503';
  const silent = 'oauth2_token_unavailable: the token endpoint did not answer within 1000 ms';

  it('the worker writes what failed and keeps since when; a token, a refusal or another token URL clears it', async () => {
    const row = await t.repos.endpoints.upsertByResourceUid('test:unavailable', spec('s'));
    expect(row.tokenUnavailable).toBeNull();
    await t.repos.endpoints.recordTokenUnavailable(row, down);
    const first = (await t.repos.endpoints.get(row.id))?.tokenUnavailable;
    expect(first).toMatchObject({ message: down, since: expect.any(Date) });
    // other words later in the same spell: the words change, since stays
    await new Promise((r) => setTimeout(r, 20));
    await t.repos.endpoints.recordTokenUnavailable(row, silent);
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable).toEqual({ message: silent, since: first!.since });
    // the worker got a token: cleared
    await t.repos.endpoints.clearTokenFailures(row);
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable).toBeNull();
    // a refusal says the token endpoint answered: no longer unavailable
    await t.repos.endpoints.recordTokenUnavailable(row, down);
    await t.repos.endpoints.recordTokenRefusal(row, 'oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client');
    expect(await t.repos.endpoints.get(row.id)).toMatchObject({ tokenUnavailable: null, tokenRefusal: { message: expect.any(String) } });
    await t.repos.endpoints.clearTokenFailures(row);
    // the operator writing the same spec keeps it; another token URL clears it, and a late failure of the old one is not written
    await t.repos.endpoints.recordTokenUnavailable(row, down);
    await t.repos.endpoints.upsertByResourceUid('test:unavailable', spec('s', { maxAttempts: 9 }));
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable?.message).toBe(down);
    const moved = { ...OAUTH2_CLIENT, tokenUrl: 'https://idp2.example/oauth/token' };
    await t.repos.endpoints.upsertByResourceUid('test:unavailable', spec('s', { authOAuth2: moved }));
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable).toBeNull();
    await t.repos.endpoints.recordTokenUnavailable(row, down);
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable).toBeNull();
  });

  it('refuses words without their time', async () => {
    expect(
      await refusal(t.database.db('webhook_endpoint').insert({ name: 'e', source: 's', url: 'http://x/h', oauth2_token_unavailable: 'x' })),
    ).toMatch(/webhook_endpoint_token_unavailable_chk/);
  });
});
