import { NativeConnection } from '@temporalio/worker';
import { API_KEY_REFRESH_MS, currentApiKey, temporalConnectionSettings } from '../config/tls.js';
import { checkAccess, explained, type TemporalTarget } from './connection.js';

/**
 * The worker's NativeConnection with the configured TLS, client certificate and API key
 * (config/tls.ts), its files read now. An API key from a file is read again every
 * API_KEY_REFRESH_MS and handed to the connection when it changed (a rotated Secret); close()
 * stops that and closes the connection.
 */
export async function connectTemporalNative(t: TemporalTarget): Promise<NativeConnection> {
  const settings = temporalConnectionSettings(t);
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(settings);
  } catch (err) {
    throw await explained(err, t);
  }
  await checkAccess(connection, t);
  const key = t.tls?.apiKey;
  if (key === undefined || 'value' in key) return connection;
  let last = settings.apiKey;
  const timer = setInterval(() => {
    let next: string;
    try {
      next = currentApiKey(key);
    } catch {
      return; // a Secret being rewritten: the next tick reads it
    }
    if (next === last) return;
    last = next;
    void connection.setApiKey(next).catch(() => undefined);
  }, API_KEY_REFRESH_MS);
  timer.unref();
  const close = connection.close.bind(connection);
  connection.close = async () => {
    clearInterval(timer);
    await close();
  };
  return connection;
}
