// Where the console lives and how it logs in: shared by the server plugin and dev mode's identity
// provider (which must not load the plugin's dependencies to know them).

export const CONSOLE_PREFIX = '/console';
/** where the identity provider sends the browser back to (register it as the SPA's callback URL) */
export const CONSOLE_CALLBACK_PATH = `${CONSOLE_PREFIX}/callback`;
/** the scope of the specification's browser login */
export const CONSOLE_SCOPE = 'openid profile email';
