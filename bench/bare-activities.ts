import { ApplicationFailure } from '@temporalio/activity';
import { Agent, request } from 'undici';
import type { BareActivities } from './bare-workflow.js';

/** The only work of the bare baseline: an HTTP POST, on the same client library as the real sender. */
export function createBareActivities(): { activities: BareActivities; close(): Promise<void> } {
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  return {
    activities: {
      async post({ url, body }) {
        const res = await request(url, {
          dispatcher: agent,
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
        await res.body.text();
        if (res.statusCode >= 300) throw ApplicationFailure.retryable(`HTTP ${res.statusCode}`);
        return res.statusCode;
      },
    },
    close: () => agent.close(),
  };
}
