import { BASE } from '../base.js';

/** Where the identity provider sends the browser back to (its redirect_uri is this on the console's origin). */
export const CALLBACK_PATH = `${BASE}/callback`;

/** Only a path of the console itself is a place to return to: never another origin. */
export function safeReturnTo(path: string | null | undefined): string {
  if (!path || !path.startsWith(`${BASE}/`) || path.startsWith('//') || path.startsWith(CALLBACK_PATH)) return `${BASE}/`;
  return path;
}
