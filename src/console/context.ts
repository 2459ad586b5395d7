import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api/client.js';
import type { TokenClaims } from './auth/claims.js';
import type { ConsoleConfig } from './config.js';

export interface ConsoleContext {
  api: Api;
  config: ConsoleConfig;
  claims: TokenClaims;
  /** the token carries replay:webhooks: replay and enable controls are shown */
  canReplay: boolean;
  logout(): void;
}

export const Console = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const c = useContext(Console);
  if (!c) throw new Error('useConsole outside the signed-in console');
  return c;
}
