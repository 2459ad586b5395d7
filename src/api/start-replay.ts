import type { Client } from '@temporalio/client';
import { startReplay } from '../workflows/start/replay.js';
import type { StartReplay } from './replay-service.js';

/**
 * startReplay on a client and task queue, bounded in time: with Temporal down, the SDK's own
 * retries would hold an operator's request for a long while; past the deadline it is a 503.
 */
export function bindStartReplay(client: Client, taskQueue: string, timeoutMs = 10_000): StartReplay {
  return (req) => client.connection.withDeadline(Date.now() + timeoutMs, () => startReplay(client, { ...req, taskQueue }));
}
