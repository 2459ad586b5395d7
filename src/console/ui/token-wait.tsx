import { Time } from './common-components.js';
import type { TokenWait } from './endpoint-state.js';

/**
 * A PENDING delivery held by its endpoint's OAuth2 token (ui/endpoint-state.ts tokenWait): in a
 * table, "waiting for a token: refused since <time>" or "waiting: the token endpoint <host> is
 * unavailable since <time>"; on the delivery's page the token server's words (refused) or what
 * failed (unavailable) too, as text (attacker text: never markup).
 */
export function TokenWaitNote({ wait, full = false }: { wait: TokenWait; full?: boolean }) {
  if (wait.kind === 'unavailable') {
    return (
      <span
        class="token-wait"
        title="Its endpoint's token endpoint is unavailable (an error, no answer): it waits, no attempt spent, and is sent once a token is granted"
      >
        waiting: the token endpoint {wait.host} is unavailable since <Time iso={wait.since} />
        {full && <> ({wait.message})</>}
      </span>
    );
  }
  return (
    <span
      class="token-wait"
      title="Its endpoint's token endpoint refuses the client credentials: it waits until the Secret (or the client) is fixed"
    >
      waiting for a token: refused since <Time iso={wait.since} />
      {full && <>: {wait.message}</>}
    </span>
  );
}
