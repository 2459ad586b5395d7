import { startReceiver, type Receiver } from '../../support/receiver.js';
import type { EndpointSpec } from './own-source.js';

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
