import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';

// The real browser of the console tests: Debian's chromium (apt), driven by playwright-core through
// executablePath; nothing is downloaded. A page records what a user could not see but a check
// must: dialogs, CSP violations the browser raised, and every URL it requested.

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** screenshots of every page (gitignored), for a person to look at */
export const SCREENSHOT_DIR = path.resolve('test-output/console');

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // as root in CI the sandbox can not start; /dev/shm may be small in containers
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    timeout: 120_000,
  });
}

export interface Watched {
  context: BrowserContext;
  page: Page;
  dialogs: string[];
  requests: Request[];
  /** securitypolicyviolation events seen in the page (from an init script: CSP does not apply to it) */
  cspViolations(): Promise<string[]>;
  /** globals a probe would set if it ran */
  probeGlobals(): Promise<string[]>;
  close(): Promise<void>;
}

/** The names the hostile payloads try to set (test/console/console.test.ts). */
export const PROBE_GLOBALS = ['__probeScript', '__probeImg', '__probeJs', '__probeTitle', '__probeSvg'] as const;

export async function watchedPage(browser: Browser): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, permissions: [] });
  context.setDefaultTimeout(60_000);
  context.setDefaultNavigationTimeout(90_000);
  // browser-side code as text: the test's TypeScript program has node's types, not the DOM's
  await context.addInitScript({
    content: `(() => {
      const seen = [];
      globalThis.__cspViolations = seen;
      document.addEventListener('securitypolicyviolation', (e) => seen.push(e.violatedDirective + ' ' + e.blockedURI));
    })();`,
  });
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => undefined);
  });
  const requests: Request[] = [];
  context.on('request', (r) => requests.push(r));
  return {
    context,
    page,
    dialogs,
    requests,
    cspViolations: () => page.evaluate<string[]>('[...(globalThis.__cspViolations ?? [])]'),
    probeGlobals: (names: readonly string[] = PROBE_GLOBALS) => page.evaluate((list) => list.filter((n) => n in globalThis), [...names]),
    close: () => context.close(),
  };
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core (npm) run in the page: evaluated over the DevTools protocol, which the page's CSP does
 * not govern, so the console's strict policy stays on while it is checked.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate<boolean>("'axe' in globalThis"))) await page.evaluate(axeSource);
  return page.evaluate<AxeViolation[]>(`(async () => {
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => JSON.stringify(n.target)) }));
  })()`);
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** An element as "tag:accessible-ish name", the same in tabOrder and controls. */
const DESCRIBE = `((el) => el.tagName.toLowerCase() + ':' + (el.getAttribute('aria-label') || (el.labels && el.labels[0] && el.labels[0].textContent) || el.textContent || el.id || '').trim().replace(/\\s+/g, ' ').slice(0, 60))`;

/**
 * Presses Tab until focus comes back to where it started and returns what it reached (tag, name),
 * so that a test can check every control of a page is reachable by keyboard alone.
 */
export async function tabOrder(page: Page, max = 200): Promise<string[]> {
  const reached: string[] = [];
  await page.evaluate('document.activeElement && document.activeElement.blur()');
  await page.evaluate('globalThis.__tabSeen = new WeakSet(); globalThis.__tabLast = null');
  let outside = 0;
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const step = await page.evaluate<{ id: string; same: boolean; again: boolean } | null>(`(() => {
      const el = document.activeElement;
      if (!el || el === document.body) return null;
      // a date input takes a Tab per field (day, month, ...): the same element again is no loop
      if (globalThis.__tabLast === el) return { id: '', same: true, again: false };
      globalThis.__tabLast = el;
      const again = globalThis.__tabSeen.has(el);
      globalThis.__tabSeen.add(el);
      return { id: ${DESCRIBE}(el), same: false, again };
    })()`);
    // past the last control focus leaves the page; the next Tab starts again at the top
    if (step === null) {
      if (++outside > 2) break;
      continue;
    }
    if (step.same) continue;
    if (step.again) break;
    reached.push(step.id);
  }
  return reached;
}

/** Every control of the page that a mouse could use (visible, enabled), in the same form as tabOrder. */
export async function controls(page: Page): Promise<string[]> {
  return page.evaluate<
    string[]
  >(`[...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])')]
    .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && !el.disabled; })
    .map(${DESCRIBE})`);
}
