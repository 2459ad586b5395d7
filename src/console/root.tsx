import { useEffect, useMemo, useState } from 'preact/hooks';
import { createApi } from './api/client.js';
import { completeLogin, startLogin } from './auth/login.js';
import { claimsOf, PERMISSION } from './auth/claims.js';
import { clearSession, currentSession, type Session } from './auth/session.js';
import { App } from './app.js';
import { BASE, loadConfig, type ConsoleConfig } from './config.js';
import { Console, type ConsoleContext } from './context.js';
import { to } from './routes.js';

type Phase =
  | { name: 'config' }
  | { name: 'failed'; message: string; retryLogin: boolean }
  | { name: 'redirecting' }
  | { name: 'signed-out' }
  | { name: 'signed-in'; session: Session };

const here = () => `${location.pathname}${location.search}`;

/**
 * Login state: reads the console's configuration, finishes a login coming back from the identity
 * provider, sends the browser to it when there is no valid token, and back to it at the token's
 * expiry or on any 401. The pages render only with a token.
 */
export function Root({ callbackParams }: { callbackParams: URLSearchParams | null }) {
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const [phase, setPhase] = useState<Phase>({ name: 'config' });

  const login = (cfg: ConsoleConfig, returnTo: string) => {
    clearSession();
    setPhase({ name: 'redirecting' });
    startLogin(cfg, returnTo).catch((err: unknown) => setPhase({ name: 'failed', message: String(err), retryLogin: true }));
  };

  useEffect(() => {
    loadConfig().then(
      async (cfg) => {
        setConfig(cfg);
        if (callbackParams) {
          const result = await completeLogin(cfg, callbackParams).catch((err: unknown) => ({ ok: false as const, error: String(err) }));
          if (!result.ok) return setPhase({ name: 'failed', message: `Login failed: ${result.error}`, retryLogin: true });
          history.replaceState(null, '', result.returnTo);
        }
        if (location.pathname === to.signedOut()) return setPhase({ name: 'signed-out' });
        const session = currentSession();
        if (session) setPhase({ name: 'signed-in', session });
        else login(cfg, here());
      },
      (err: unknown) => setPhase({ name: 'failed', message: err instanceof Error ? err.message : String(err), retryLogin: false }),
    );
  }, []);

  // at the token's expiry: back to login, returning to this page
  const session = phase.name === 'signed-in' ? phase.session : null;
  useEffect(() => {
    if (!session || !config) return;
    const timer = setTimeout(() => login(config, here()), Math.max(0, Math.min(session.expiresAt - Date.now(), 2 ** 31 - 1)));
    return () => clearTimeout(timer);
  }, [session, config]);

  const context = useMemo<ConsoleContext | null>(() => {
    if (!session || !config) return null;
    const claims = claimsOf(session.accessToken);
    return {
      config,
      claims,
      canReplay: claims.permissions.has(PERMISSION.replay),
      api: createApi({
        baseUrl: config.apiBase ?? '',
        token: () => currentSession()?.accessToken ?? null,
        onUnauthorized: () => login(config, here()),
      }),
      logout: () => {
        clearSession();
        history.pushState(null, '', to.signedOut());
        setPhase({ name: 'signed-out' });
      },
    };
  }, [session, config]);

  if (context) {
    return (
      <Console.Provider value={context}>
        <App />
      </Console.Provider>
    );
  }
  return (
    <main class="centered" id="main">
      <div class="card login-card">
        <p class="brand-large">webhook-fanout</p>
        {phase.name === 'config' && <p role="status">Loading…</p>}
        {phase.name === 'redirecting' && <p role="status">Redirecting to the login page…</p>}
        {phase.name === 'signed-out' && (
          <>
            <h1>Signed out</h1>
            <p>The access token was removed from this tab.</p>
            {config && (
              <button type="button" onClick={() => login(config, `${BASE}/`)}>
                Log in
              </button>
            )}
          </>
        )}
        {phase.name === 'failed' && (
          <>
            <h1>Cannot open the console</h1>
            <p role="alert">{phase.message}</p>
            {phase.retryLogin && config && (
              <button type="button" onClick={() => login(config, `${BASE}/`)}>
                Log in again
              </button>
            )}
          </>
        )}
      </div>
    </main>
  );
}
