import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { TemporalConfig } from '../config/config.js';
import { apiKeySource, currentApiKey, temporalConnectionSettings, type TemporalTls } from '../config/tls.js';
import { diagnoseTemporalAuth, diagnoseTemporalTls, isAuthorizationRefusal, type ConfiguredApiKey } from './tls-diagnosis.js';

/** What a connection is made from; with `namespace`, access to it is checked at connect (see checkAccess). */
export type TemporalTarget = Pick<TemporalConfig, 'address' | 'tls'> & Partial<Pick<TemporalConfig, 'namespace'>>;

/**
 * A client Connection to Temporal with the configured TLS, client certificate and API key
 * (config/tls.ts): the files are read now, at each connect; an API key file is re-read while the
 * connection lives (apiKeySource), so a rotated key needs no restart. `lazy`: connects on first use.
 */
export function temporalClientOptions(t: TemporalTarget, extra: Partial<ConnectionOptions> = {}): ConnectionOptions {
  const { apiKey: _fixed, ...settings } = temporalConnectionSettings(t);
  const key = t.tls?.apiKey;
  return { ...settings, ...(key !== undefined ? { apiKey: apiKeySource(key) } : {}), ...extra };
}

export async function connectTemporalClient(t: TemporalTarget, extra: Partial<ConnectionOptions> = {}): Promise<Connection> {
  let connection: Connection;
  try {
    connection = await Connection.connect(temporalClientOptions(t, extra));
  } catch (err) {
    throw await explained(err, t);
  }
  await checkAccess(connection, t);
  return connection;
}

/**
 * Over TLS (where a server may have authorization on, as Temporal Cloud has), asks for the
 * namespace once at connect: the connect itself only calls GetSystemInfo, which a server answers
 * without credentials, so a missing API key would otherwise show only at the first workflow start,
 * with the process ready. Refused: the connection is closed and the error names the setting.
 */
export async function checkAccess(connection: Pick<Connection, 'workflowService' | 'close'>, t: TemporalTarget): Promise<void> {
  if (t.tls === null || t.namespace === undefined) return;
  try {
    await connection.workflowService.describeNamespace({ namespace: t.namespace });
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw await explained(err, t);
  }
}

/**
 * A failed connect's error with what it means for the configuration: a refused credential (the API
 * key), or what our own TLS handshake says (tls-diagnosis.ts); the others as they are.
 */
export async function explained(err: unknown, t: TemporalTarget): Promise<unknown> {
  if (t.tls === null) return err;
  const why = isAuthorizationRefusal(err)
    ? diagnoseTemporalAuth(configuredApiKey(t.tls), t.namespace)
    : await diagnoseTemporalTls(temporalConnectionSettings(t)).catch(() => undefined);
  if (why === undefined) return err;
  return new Error(`${err instanceof Error ? err.message : String(err)}: ${why}`, { cause: err });
}

function configuredApiKey(tls: TemporalTls): ConfiguredApiKey | undefined {
  const { apiKey } = tls;
  if (apiKey === undefined) return undefined;
  let key: string | undefined;
  try {
    key = currentApiKey(apiKey);
  } catch {
    key = undefined; // a file being rewritten: said without its expiry
  }
  return { setting: 'value' in apiKey ? 'TEMPORAL_API_KEY' : 'TEMPORAL_API_KEY_FILE', key };
}
