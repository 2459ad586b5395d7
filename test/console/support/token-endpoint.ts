import { onTestFinished } from 'vitest';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import type { ConsoleStack } from './console-stack.js';
import type { EndpointSpec, OwnSource } from './own-source.js';

/**
 * A token endpoint (RFC 6749) that answers every request with `status` and an OAuth error as JSON,
 * its description in the server's own words: what the worker writes on the endpoint's row.
 */
export const failingTokenEndpoint = (status: number, error: string, description: string): Promise<Receiver> =>
  startReceiver([
    { status, body: JSON.stringify({ error, error_description: description }), headers: { 'content-type': 'application/json' } },
  ]);

/** The Secret an oauth2Endpoint's client secret is in: pass it as the source's `secrets`. */
export const oauth2Secret = (secret: string): Record<string, Record<string, string>> => ({ 'partner-oauth': { secret } });

/** An OAuth2 client credentials endpoint sending to `url`, its token asked at `tokenUrl`, its client secret in oauth2Secret's Secret. */
export const oauth2Endpoint = (url: string, tokenUrl: string): EndpointSpec => ({
  url,
  auth: {
    type: 'OAuth2ClientCredentials',
    oauth2: { tokenUrl, clientId: 'webhook-fanout', clientSecretRef: { name: 'partner-oauth', key: 'secret' } },
  },
});

/**
 * A source of the test's own whose endpoint `partner` asks its token of a token endpoint answering
 * 503 (temporarily_unavailable, in `description`'s words) and sends to a receiver answering 200,
 * both closed after the test; the client secret is `secret`. The test scripts the token endpoint's
 * next answers (`idp.setScript`).
 */
export async function tokenUnavailableSource(
  stack: Pick<ConsoleStack, 'source'>,
  name: string,
  opts: { description: string; secret: string; endpoint?: Record<string, unknown> },
): Promise<{ s: OwnSource; idp: Receiver; receiver: Receiver }> {
  const idp = await failingTokenEndpoint(503, 'temporarily_unavailable', opts.description);
  const receiver = await startReceiver([{ status: 200, body: 'ok' }]);
  onTestFinished(async () => {
    await Promise.all([idp.close(), receiver.close()]);
  });
  const partner = { ...oauth2Endpoint(`${receiver.url}/hooks`, `${idp.url}/oauth/token`), ...opts.endpoint };
  const s = await stack.source(name, { partner }, { secrets: oauth2Secret(opts.secret) });
  return { s, idp, receiver };
}
