import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** ms from the first byte sent to the answer (or to the close without one) */
  elapsedMs: number;
  /** the server closed the connection */
  closed: boolean;
}

/**
 * Sends bytes exactly as given over a fresh TCP connection (no client library normalising
 * anything) and reads one response. `keepSending` writes more bytes every interval until the
 * answer comes: a sender that never finishes its body.
 */
export function rawRequest(
  url: string,
  bytes: string | Buffer,
  opts: { timeoutMs?: number; keepSending?: { chunk: string; everyMs: number } } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      finish(true);
    }, opts.timeoutMs ?? 10_000);
    let drip: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) {
        if (!closed) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(drip);
        resolve({ status: 0, headers: {}, body: '', elapsedMs: Date.now() - started, closed });
        return;
      }
      const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = headers['content-length'];
      const body = text.slice(split + 4);
      if (!closed && length !== undefined && Buffer.byteLength(body, 'latin1') < Number(length)) return;
      if (!closed && length === undefined) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(drip);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
      resolve({ status, headers, body, elapsedMs: Date.now() - started, closed });
      socket.destroy();
    };
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', (err) => {
      // a reset after the answer is still an answer
      if (chunks.length > 0) finish(true);
      else if (!settled) {
        settled = true;
        clearTimeout(timer);
        clearInterval(drip);
        reject(err);
      }
    });
    socket.write(bytes);
    if (opts.keepSending) {
      const { chunk, everyMs } = opts.keepSending;
      drip = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(chunk);
      }, everyMs);
    }
  });
}
