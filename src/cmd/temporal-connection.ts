import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { TemporalConfig } from '../config/config.js';
import { apiKeySource, temporalConnectionSettings } from '../config/tls.js';
import { diagnoseTemporalTls } from './temporal-tls-diagnosis.js';

/**
 * A client Connection to Temporal with the configured TLS, client certificate and API key
 * (config/tls.ts): the files are read now, at each connect; an API key file is re-read while the
 * connection lives (apiKeySource), so a rotated key needs no restart. `lazy`: connects on first use.
 */
export function temporalClientOptions(
  t: Pick<TemporalConfig, 'address' | 'tls'>,
  extra: Partial<ConnectionOptions> = {},
): ConnectionOptions {
  const { apiKey: _fixed, ...settings } = temporalConnectionSettings(t);
  const key = t.tls?.apiKey;
  return { ...settings, ...(key !== undefined ? { apiKey: apiKeySource(key) } : {}), ...extra };
}

export async function connectTemporalClient(
  t: Pick<TemporalConfig, 'address' | 'tls'>,
  extra: Partial<ConnectionOptions> = {},
): Promise<Connection> {
  try {
    return await Connection.connect(temporalClientOptions(t, extra));
  } catch (err) {
    throw await explained(err, t);
  }
}

/** A failed TLS connect's error with what the handshake says (temporal-tls-diagnosis.ts); the others as they are. */
export async function explained(err: unknown, t: Pick<TemporalConfig, 'address' | 'tls'>): Promise<unknown> {
  if (t.tls === null) return err;
  const why = await diagnoseTemporalTls(temporalConnectionSettings(t)).catch(() => undefined);
  if (why === undefined) return err;
  return new Error(`${err instanceof Error ? err.message : String(err)}: ${why}`, { cause: err });
}
