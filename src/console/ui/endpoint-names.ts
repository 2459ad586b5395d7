import { ok, type Api } from '../api/client.js';
import type { Endpoint } from '../api/types.js';
import type { FieldSpec } from './filters.js';
import type { Loaded } from './load.js';

/** Every endpoint (a few pages at most), by id: pages show names where the API gives ids. */
export async function loadEndpoints(api: Api): Promise<Map<string, Endpoint>> {
  const all = new Map<string, Endpoint>();
  let cursor: string | undefined;
  for (let i = 0; i < 10; i++) {
    const page = await ok(api.GET('/api/endpoints', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } }));
    for (const e of page.items) all.set(e.id, e);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  return all;
}

/** The filter forms' endpoint field: every endpoint by name and source, once they loaded. */
export function endpointField(endpoints: Loaded<Map<string, Endpoint>>): FieldSpec {
  return {
    name: 'endpointId',
    label: 'Endpoint',
    kind: 'select',
    options: endpoints.status === 'ok' ? [...endpoints.data.values()].map((e) => ({ value: e.id, label: `${e.name} (${e.source})` })) : [],
  };
}
