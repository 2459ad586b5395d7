import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './openapi-types.js';

/** A typed client of the admin API (types generated from its OpenAPI document: api/openapi-types.ts). */
export type Api = Client<paths>;

/** An answer other than 2xx, as the API's problem+json says it (RFC 9457). */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string | undefined,
    readonly code: string | undefined,
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
}

export interface ApiOptions {
  /** '' or absent: this origin */
  baseUrl?: string;
  /** the current access token, or null when signed out */
  token(): string | null;
  /** a 401: the token expired or was refused; the console goes back to login */
  onUnauthorized(): void;
}

export function createApi(opts: ApiOptions): Api {
  const api = createClient<paths>({ baseUrl: opts.baseUrl ?? '' });
  api.use({
    onRequest({ request }) {
      const token = opts.token();
      // only ever in the header: a URL ends up in logs and proxies
      if (token) request.headers.set('authorization', `Bearer ${token}`);
      return request;
    },
    onResponse({ response }) {
      if (response.status === 401) opts.onUnauthorized();
      return response;
    },
  });
  return api;
}

function problemOf(response: Response, error: unknown): ApiProblem {
  const p = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const title = str(p.title) ?? (response.statusText || `HTTP ${response.status}`);
  return new ApiProblem(response.status, title, str(p.detail), str(p.code));
}

/** The data of a 2xx answer, else throws its ApiProblem. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (err) {
    throw new ApiProblem(0, 'The service could not be reached', err instanceof Error ? err.message : undefined, 'network');
  }
  if (!result.response.ok || result.data === undefined) throw problemOf(result.response, result.error);
  return result.data;
}
