import { request } from 'undici';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: () => unknown;
}

/** A real HTTP call over a socket (no inject), so Node's own limits apply as in production. */
export async function http(
  url: string,
  opts: { method?: 'GET' | 'POST' | 'PUT'; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<HttpResult> {
  const res = await request(url, { method: opts.method ?? 'POST', headers: opts.headers, body: opts.body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as unknown };
}

export const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
