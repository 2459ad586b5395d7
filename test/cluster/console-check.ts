import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { startIdentityProvider } from '../../src/dev/identity-provider.js';
import { DEV_CONSOLE_CLIENT_ID, DEV_READONLY_USER, DEV_USER } from '../../src/dev/dev-idp.js';
import { launchChromium, watchedPage } from '../console/support/browser.js';

/**
 * The console of the image on the cluster (test/cluster/run.sh), in a real browser:
 *
 *   tsx test/cluster/console-check.ts idp <listen address> <console origin>...
 *     dev mode's identity provider for the ingest pods to trust: listens on an address of the node
 *     (the pods fetch its key set there, the browser logs in there), prints its AUTH_URL, stays up
 *   tsx test/cluster/console-check.ts browser <console origin> <event id>
 *     signs in through the login page, opens the overview and the event sent before; fails on a
 *     dialog, a CSP violation, or the token in a request URL. Screenshots in test-output/cluster.
 */

export const CLUSTER_AUDIENCE = 'https://webhook-fanout.cluster.test/api';

async function idp(host: string, origins: string[]): Promise<void> {
  const provider = await startIdentityProvider({
    audience: CLUSTER_AUDIENCE,
    clients: [],
    host,
    users: [DEV_USER, DEV_READONLY_USER],
    browserClients: [{ clientId: DEV_CONSOLE_CLIENT_ID, redirectUris: origins.map((o) => `${o}/console/callback`) }],
  });
  process.stdout.write(`${provider.url}\n`);
  const stop = () => void provider.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

async function browser(origin: string, eventId: string): Promise<void> {
  const shots = path.resolve('test-output/cluster');
  await mkdir(shots, { recursive: true });
  const chromium = await launchChromium();
  const w = await watchedPage(chromium);
  const problems: string[] = [];
  try {
    const { page } = w;
    // the console sends a browser without a session to the identity provider's login page
    await page.goto(`${origin}/console/events/${eventId}`);
    await page.waitForURL(/\/authorize\?/, { timeout: 60_000 });
    await page.fill('#username', DEV_USER.username);
    await page.fill('#password', DEV_USER.password);
    await page.click('button[type=submit]');
    // back on the page asked for, signed in: the event's id on it
    await page.waitForURL((u) => u.pathname === `/console/events/${eventId}`, { timeout: 60_000 });
    await page.getByText(eventId).first().waitFor({ timeout: 60_000 });
    await page.screenshot({ path: path.join(shots, 'event.png'), fullPage: true });
    await page.goto(`${origin}/console/`);
    await page.locator('main').first().waitFor();
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: path.join(shots, 'overview.png'), fullPage: true });

    if (w.dialogs.length > 0) problems.push(`dialogs: ${w.dialogs.join('; ')}`);
    const csp = await w.cspViolations();
    if (csp.length > 0) problems.push(`CSP violations: ${csp.join('; ')}`);
    const leaks = w.requests.map((r) => r.url()).filter((u) => /access_token=|eyJ[A-Za-z0-9_-]{10,}\./.test(u.split('#')[0] ?? ''));
    if (leaks.length > 0) problems.push(`a token in a request URL: ${leaks.length} request(s)`);
    const apiCalls = w.requests.filter((r) => r.url().startsWith(`${origin}/api/`)).length;
    if (apiCalls === 0) problems.push('the console made no admin API call');
    console.log(`console on the cluster: signed in, event ${eventId} shown, ${apiCalls} admin API calls, screenshots in ${shots}`);
  } finally {
    await w.close();
    await chromium.close();
  }
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exit(1);
  }
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'idp' && args[0]) await idp(args[0], args.slice(1));
else if (mode === 'browser' && args[0] && args[1]) await browser(args[0], args[1]);
else {
  console.error('usage: console-check.ts idp <host> <origin>... | browser <origin> <event id>');
  process.exit(2);
}
