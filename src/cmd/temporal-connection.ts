import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { TemporalConfig } from '../config/config.js';
import { apiKeySource, temporalConnectionSettings } from '../config/tls.js';

/**
 * A client Connection to Temporal with the configured TLS, client certificate and API key
 * (config/tls.ts): the files are read now, at each connect; an API key file is re-read while the
 * connection lives (apiKeySource), so a rotated key needs no restart. `lazy`: connects on first use.
 */
export function temporalClientOptions(t: Pick<TemporalConfig, 'address' | 'tls'>, extra: Partial<ConnectionOptions> = {}): ConnectionOptions {
  const { apiKey: _fixed, ...settings } = temporalConnectionSettings(t);
  const key = t.tls?.apiKey;
  return { ...settings, ...(key !== undefined ? { apiKey: apiKeySource(key) } : {}), ...extra };
}

export function connectTemporalClient(t: Pick<TemporalConfig, 'address' | 'tls'>, extra: Partial<ConnectionOptions> = {}): Promise<Connection> {
  return Connection.connect(temporalClientOptions(t, extra));
}
