import type { Readable } from 'node:stream';

export interface BodyPrefix {
  /** the first `limit` bytes as UTF-8 */
  text: string;
  /** how many bytes were kept */
  bytes: number;
  /** true when the body was longer than `limit` and the rest was not read */
  truncated: boolean;
  /** set when reading failed (timeout, reset); `text` holds what arrived before */
  error?: unknown;
}

/**
 * Reads at most `limit` bytes of a response body, then destroys the stream: a huge or endless
 * body costs neither memory nor time. Never throws; a read error is returned with the partial text.
 */
export async function readBodyPrefix(body: Readable, limit: number): Promise<BodyPrefix> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  let error: unknown;
  try {
    for await (const chunk of body as AsyncIterable<Buffer | string>) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      const take = Math.min(buf.length, limit - size);
      chunks.push(buf.subarray(0, take));
      size += take;
      // once full, the next non-empty chunk proves there is more: stop there
      if (take < buf.length) {
        truncated = true;
        break; // leaving the loop destroys the stream (and the connection)
      }
    }
  } catch (err) {
    error = err;
  }
  if (!body.destroyed && (truncated || error !== undefined)) body.destroy();
  const text = decodeUtf8(Buffer.concat(chunks, size), truncated);
  return error === undefined ? { text, bytes: size, truncated } : { text, bytes: size, truncated, error };
}

/**
 * UTF-8 text fit for a Postgres text column: a multi-byte character cut by the limit is dropped
 * rather than turned into U+FFFD, and NUL (which text columns reject) becomes U+FFFD.
 */
export function decodeUtf8(bytes: Buffer, cut: boolean): string {
  const text = new TextDecoder('utf-8').decode(bytes, { stream: cut });
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}
