import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown>; parameters?: Array<{ name: string }> }>>;
  components: { securitySchemes: Record<string, unknown> };
}

describe('OpenAPI document and docs page', () => {
  let h: AdminHarness;
  let doc: OpenApiDoc;

  beforeAll(async () => {
    h = await startAdminHarness();
    const res = await h.get('/api/openapi.json');
    expect(res.status).toBe(200);
    doc = res.json() as OpenApiDoc;
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is OpenAPI 3.1, served without a token, and lists every admin route and the inbound route', () => {
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`));
    expect(operations.sort()).toEqual(
      [
        'GET /api/events',
        'GET /api/events/{id}',
        'POST /api/events/{id}/replay',
        'GET /api/deliveries',
        'GET /api/deliveries/{id}',
        'GET /api/deliveries/{id}/attempts',
        'POST /api/deliveries/{id}/replay',
        'POST /api/deliveries/{id}/skip',
        'POST /api/deliveries/replay',
        'GET /api/endpoints',
        'POST /api/endpoints/{id}/enable',
        'GET /api/inbound-credentials',
        'GET /api/stats/attention',
        'GET /api/stats/timeseries',
        'GET /api/me',
        'POST /api/webhooks/{source}',
      ].sort(),
    );
    expect(doc.components.securitySchemes).toMatchObject({
      bearerAuth: { type: 'http', scheme: 'bearer' },
      basicAuth: { scheme: 'basic' },
    });
  });

  it('documents the bearer requirement, the filters and the problem+json errors from the route schemas', () => {
    const list = doc.paths['/api/events']?.get;
    expect(list?.security).toEqual([{ bearerAuth: [] }]);
    expect(list?.parameters?.map((p) => p.name).sort()).toEqual([
      'cursor',
      'externalId',
      'from',
      'limit',
      'source',
      'status',
      'to',
      'type',
    ]);
    expect(Object.keys(list?.responses ?? {})).toEqual(expect.arrayContaining(['200', '400', '401', '403']));
    expect(JSON.stringify(list?.responses['401'])).toContain('application/problem+json');
    const replay = doc.paths['/api/deliveries/{id}/replay']?.post;
    expect(Object.keys(replay?.responses ?? {})).toEqual(expect.arrayContaining(['202', '401', '403', '404', '409']));
    expect(doc.paths['/api/webhooks/{source}']?.post?.security).toEqual([{ basicAuth: [] }]);
    const enable = doc.paths['/api/endpoints/{id}/enable']?.post;
    expect(enable?.security).toEqual([{ bearerAuth: [] }]);
    expect(Object.keys(enable?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '403', '404']));
  });

  it('serves the browsable docs page and its bundled assets', async () => {
    const page = await h.get('/api/docs');
    const html = page.status === 302 ? await h.get(String(page.headers.location)) : page;
    expect(html.status).toBe(200);
    expect(html.text).toContain('swagger-ui');
    const css = await h.get('/api/docs/static/swagger-ui.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/text\/css/);
  });
});
