import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { API_TYPES_FILE, adminOpenApiDocument, generateApiTypes } from '../../scripts/console/api-types.js';

describe("the console's API types", () => {
  it("are what openapi-typescript generates from the admin API's OpenAPI document now (run `npm run console:types` when this fails)", async () => {
    const committed = await readFile(API_TYPES_FILE, 'utf8');
    expect(committed, 'src/console/api/openapi-types.ts is stale: run `npm run console:types`').toBe(await generateApiTypes());
  });

  it("cover every admin route of the document, so a new or renamed route shows up in the console's types", async () => {
    const doc = (await adminOpenApiDocument()) as { paths: Record<string, unknown> };
    const committed = await readFile(API_TYPES_FILE, 'utf8');
    const routes = Object.keys(doc.paths).filter((p) => p.startsWith('/api/') && p !== '/api/webhooks/{source}');
    for (const route of routes) expect(committed).toContain(`"${route}": {`);
  });

  it("serve every route the console's pages call", async () => {
    const doc = (await adminOpenApiDocument()) as { paths: Record<string, unknown> };
    const pages = new URL('../../src/console/pages/', import.meta.url);
    const called = new Set<string>();
    for (const file of await readdir(pages)) {
      const text = await readFile(new URL(file, pages), 'utf8');
      for (const m of text.matchAll(/'(\/api\/[^'\s]*)'/g)) called.add(m[1]!);
    }
    expect(called.size, 'no page of the console calls the admin API: has src/console/pages/ moved?').toBeGreaterThan(0);
    expect([...called].filter((route) => !(route in doc.paths))).toEqual([]);
  });
});
