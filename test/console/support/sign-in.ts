import type { Page } from 'playwright-core';

export interface Login {
  username: string;
  password: string;
}

/** The user dev mode printed on the line `pattern` matches (user and password its two groups). */
export function printedUser(output: string, pattern: RegExp, what: string): Login {
  const m = pattern.exec(output);
  if (!m) throw new Error(`dev mode did not print the ${what}:\n${output}`);
  return { username: m[1]!, password: m[2]! };
}

/** Signs in on the identity provider's login page the console sent the browser to. */
export async function signIn(page: Page, authUrl: string, user: Login): Promise<void> {
  await page.waitForURL((u) => u.href.startsWith(`${authUrl}/authorize`));
  await page.getByLabel('User name').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Waits for the page's one level-1 heading: the page has rendered. */
export const heading = (page: Page, name: string): Promise<void> => page.getByRole('heading', { level: 1, name }).waitFor();

/** dev mode's read-only user (read:webhooks), as it printed it at start. */
export const readOnlyUser = (output: string): Login => printedUser(output, /read-only\s+(\S+) \/ (\S+)/, 'read-only user');

/** dev mode's tenant, whose tokens carry the namespaces claim with namespace `default` only, as it printed it at start. */
export const tenantUser = (output: string): Login =>
  printedUser(output, /a tenant\s+(\S+) \/ (\S+)\s+\(read:webhooks replay:webhooks, namespace default only\)/, 'tenant user');
