import { describe, expect, it } from 'vitest';
import { loadIngestConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/config/env-reader.js';
import { DEFAULT_NAMESPACES_CLAIM } from '../../../src/config/settings.js';

const BASE = { DATABASE_URL: 'postgres://u:p@localhost/db', TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:t', CONSOLE_CLIENT_ID: 'spa' };

describe('ingest configuration of the admin API', () => {
  it('refuses to start without AUTH_URL and AUTH_AUDIENCE, naming both and the way out', () => {
    let err: unknown;
    try {
      loadIngestConfig(BASE);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as ConfigError).message;
    expect(message).toContain('AUTH_URL');
    expect(message).toContain('AUTH_AUDIENCE');
    expect(message).toContain('ADMIN_API_ENABLED=false');
    expect(() => loadIngestConfig({ ...BASE, AUTH_URL: 'https://tenant.auth0.com' })).toThrow(/AUTH_AUDIENCE/);
    expect(() => loadIngestConfig({ ...BASE, AUTH_URL: 'tenant.auth0.com', AUTH_AUDIENCE: 'https://api' })).toThrow(
      /AUTH_URL must be an http\(s\) URL/,
    );
  });

  it('runs without the admin API only when explicitly disabled', () => {
    expect(loadIngestConfig({ ...BASE, ADMIN_API_ENABLED: 'false' }).adminApi).toBeNull();
    expect(() => loadIngestConfig({ ...BASE, ADMIN_API_ENABLED: 'maybe' })).toThrow(/ADMIN_API_ENABLED/);
  });

  it('defaults the issuer to AUTH_URL with one trailing slash, as Auth0 issues it', () => {
    const cfg = loadIngestConfig({ ...BASE, AUTH_URL: 'https://tenant.auth0.com/', AUTH_AUDIENCE: 'https://api.example.com' });
    expect(cfg.adminApi).toEqual({
      authUrl: 'https://tenant.auth0.com',
      audience: 'https://api.example.com',
      issuer: 'https://tenant.auth0.com/',
      clockToleranceSeconds: 30,
      jwksCacheTtlSeconds: 600,
      namespacesClaim: 'https://webhookfanout.io/namespaces',
    });
    const custom = loadIngestConfig({ ...BASE, AUTH_URL: 'https://idp', AUTH_AUDIENCE: 'a', AUTH_ISSUER: 'https://issuer.example' });
    expect(custom.adminApi?.issuer).toBe('https://issuer.example');
  });

  it("AUTH_NAMESPACES_CLAIM names the claim of tenants' namespaces; a claim the identity provider sets itself is refused by name", () => {
    const auth = { ...BASE, AUTH_URL: 'https://idp', AUTH_AUDIENCE: 'a' };
    expect(loadIngestConfig({ ...auth, AUTH_NAMESPACES_CLAIM: 'https://example.com/tenants' }).adminApi?.namespacesClaim).toBe(
      'https://example.com/tenants',
    );
    expect(() => loadIngestConfig({ ...auth, AUTH_NAMESPACES_CLAIM: 'permissions' })).toThrow(
      /AUTH_NAMESPACES_CLAIM must not be "permissions", a claim the identity provider sets itself/,
    );
    expect(() => loadIngestConfig({ ...auth, AUTH_NAMESPACES_CLAIM: 'my claim' })).toThrow(/AUTH_NAMESPACES_CLAIM must be printable ASCII/);
  });

  // the claim's rules: AUTH_NAMESPACES_CLAIM is a JWT claim name the identity provider does not set itself
  it.each<[string, string, RegExp | undefined]>([
    ['the default', DEFAULT_NAMESPACES_CLAIM, undefined],
    ['a plain name', 'tenant_namespaces', undefined],
    ['a space inside', 'my claim', /printable ASCII without spaces/],
    ['over 200 characters', 'x'.repeat(201), /1 to 200/],
    ['a claim the identity provider sets: sub', 'sub', /must not be "sub"/],
    ['permissions', 'permissions', /must not be "permissions"/],
    ['scope', 'scope', /must not be "scope"/],
  ])('AUTH_NAMESPACES_CLAIM %s', (_name, value, want) => {
    const load = () => loadIngestConfig({ ...BASE, AUTH_URL: 'https://idp', AUTH_AUDIENCE: 'a', AUTH_NAMESPACES_CLAIM: value });
    if (want === undefined) expect(load().adminApi?.namespacesClaim).toBe(value);
    else expect(load).toThrow(want);
  });
});
