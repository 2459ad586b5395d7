import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifests } from '../../src/manifests/read-manifests.js';
import { startAdminHarness, type AdminHarness } from '../api/support/admin-harness.js';
import { addEndpoint, uniqueSource } from '../fanout/support/harness.js';

// Credentials in an endpoint URL: refused where configuration comes in (dev mode manifests here,
// the CRD in test/operator/crds.test.ts), and never shown by the API for a row that has them.

const WITH_CREDENTIALS = [
  ['user and password', 'http://user:secret-pw@receiver.example/hook', 'secret-pw'],
  ['an empty username', 'http://:secret-pw@receiver.example/hook', 'secret-pw'],
  ['a bare token', 'http://secret-token@receiver.example/hook', 'secret-token'],
  ['an @ inside the password', 'http://u:secret@pw@receiver.example/hook', 'secret@pw'],
  ['https with a port', 'https://u:secret-pw@receiver.example:8443/hook?x=1', 'secret-pw'],
] as const;

const endpointDoc = (name: string, url: string) =>
  `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: ${name}}\nspec: {source: s, url: "${url}"}\n`;

describe('credentials in endpoint URLs', () => {
  let dir: string;
  let h: AdminHarness;
  let token: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'url-creds-'));
    h = await startAdminHarness();
    token = await h.token('reader');
  });
  afterAll(async () => {
    await h?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('dev mode manifests: each is refused with a message pointing to spec.auth; plain URLs (an @ in the path too) load', async () => {
    const docs = WITH_CREDENTIALS.map(([, url], i) => endpointDoc(`bad-${i}`, url));
    docs.push(endpointDoc('plain', 'http://receiver.example/hook'), endpointDoc('at-in-path', 'http://receiver.example/u@x?mail=a@b'));
    await writeFile(path.join(dir, 'endpoints.yaml'), docs.join('---\n'));
    const set = await readManifests(dir);
    expect(set.endpoints.map((e) => e.metadata.name).sort()).toEqual(['at-in-path', 'plain']);
    expect(set.errors).toHaveLength(WITH_CREDENTIALS.length);
    for (const error of set.errors) {
      expect(error).toMatch(/spec\.url: .*credentials.*spec\.auth/);
      for (const [, , secret] of WITH_CREDENTIALS) expect(error).not.toContain(secret);
    }
  });

  it('GET /api/endpoints masks the whole userinfo of rows that have one', async () => {
    const source = uniqueSource('creds');
    for (const [, url] of WITH_CREDENTIALS) await addEndpoint(h.fanout.repos, { source, url });
    const res = await h.get(`/api/endpoints?source=${source}`, token);
    expect(res.status).toBe(200);
    for (const [, , secret] of WITH_CREDENTIALS) expect(res.text).not.toContain(secret);
    const urls = (res.json() as { items: { url: string }[] }).items.map((e) => e.url).sort();
    expect(urls).toEqual(
      [
        'http://***@receiver.example/hook',
        'http://***@receiver.example/hook',
        'http://***@receiver.example/hook',
        'http://***@receiver.example/hook',
        'https://***@receiver.example:8443/hook?x=1',
      ].sort(),
    );
  });
});
