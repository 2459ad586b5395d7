import { readFile } from 'node:fs/promises';
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
    expect(routes.length).toBeGreaterThanOrEqual(9);
    for (const route of routes) expect(committed).toContain(`"${route}": {`);
  });
});
