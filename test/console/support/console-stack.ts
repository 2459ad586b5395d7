import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, expect, inject } from 'vitest';
import type { Browser } from 'playwright-core';
import type { Db } from '../../../src/db/knex.js';
import { http } from '../../support/http.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { launchChromium, watchedPage, type Watched } from './browser.js';
import { startDevConsole, type DevConsole } from './dev-console.js';
import { addSource, type EndpointSpec, type OwnSource } from './own-source.js';
import { signIn, type Login } from './sign-in.js';

/**
 * What the console tests of a describe share, set up once: dev mode as `npm start` runs it (on the
 * run's Postgres and Temporal, a database and task queue of its own, no manifests of its own),
 * one chromium, and the admin user's signed-in session. Everything else a test reads it makes
 * itself: `source()`, a source and endpoints in a namespace of its own; `admin()` and `page()`, tabs
 * of its own (closed after it), so each test passes alone and in any order.
 *
 * After every test, of what it did: no page it used raised a CSP violation or a dialog, the service
 * counted no CSP report, and no token any page held appears in a URL a page requested or in what
 * the service logged.
 */
export interface ConsoleStack {
  dev: DevConsole;
  db: Db;
  /** the user with read:webhooks and replay:webhooks (a password of this run) */
  adminUser: Login;
  /** the console's address of a path: `${dev.url}/console${path}` */
  url(path?: string): string;
  /**
   * a tab of the test's own, signed in as the admin user: the session of one sign-in (made at the
   * first use) put in its sessionStorage before the console's first page loads, as that sign-in
   * left it in its own tab
   */
  admin(): Promise<Watched>;
  /** a tab of the test's own, not signed in; closed after the test */
  page(): Promise<Watched>;
  /** a tab of the test's own signed in as `user`, on `path` */
  signedIn(user: Login, path?: string): Promise<Watched>;
  /** reads the token a page holds and remembers it for the checks after each test */
  holdToken(w: Watched): Promise<string>;
  /** a source and its endpoints of the test's own (own-source.ts) */
  source(name: string, endpoints?: Record<string, EndpointSpec>, opts?: Parameters<typeof addSource>[3]): Promise<OwnSource>;
}

/** where the console keeps its session (src/console/auth/session.ts) */
const SESSION_KEY = 'webhook-fanout.session';

export function consoleStack(opts: { flow: 'implicit' | 'code' }): ConsoleStack {
  const adminUser = { username: 'ops', password: `ops-${randomBytes(6).toString('hex')}` };
  let started: { dev: DevConsole; database: TestDatabase; browser: Browser } | undefined;
  /** the admin user's session as the console stores it (webhook-fanout.session), after one real sign-in */
  let session: Promise<string> | undefined;
  const watched: Array<{ w: Watched; open: boolean }> = [];
  const tokens = new Set<string>();

  const get = () => {
    if (!started) throw new Error('consoleStack() is used before its beforeAll ran');
    return started;
  };
  const url = (path = '/') => `${get().dev.url}/console${path}`;
  const open = async () => {
    const w = await watchedPage(get().browser);
    watched.push({ w, open: true });
    return w;
  };
  const holdToken = async (w: Watched) => {
    const raw = await w.page.evaluate<string | null>(`sessionStorage.getItem(${JSON.stringify(SESSION_KEY)})`);
    const token = raw === null ? '' : ((JSON.parse(raw) as { accessToken?: string }).accessToken ?? '');
    if (token.split('.').length !== 3) throw new Error(`the page holds no token: ${raw}`);
    tokens.add(token);
    return token;
  };
  const signInto = async (w: Watched, user: Login, path: string) => {
    await w.page.goto(url(path));
    await signIn(w.page, get().dev.authUrl, user);
    await w.page.waitForURL(url(path));
    await w.page.locator('h1').waitFor();
    await holdToken(w);
    return w;
  };

  const adminSession = () =>
    (session ??= (async () => {
      const w = await open();
      await signInto(w, adminUser, '/');
      return (await w.page.evaluate<string | null>(`sessionStorage.getItem(${JSON.stringify(SESSION_KEY)})`)) ?? '';
    })().catch((err: unknown) => {
      // the next test tries again rather than inheriting this one's failure
      session = undefined;
      throw err;
    }));

  beforeAll(async () => {
    const database = await createTestDatabase();
    // chromium starts while dev mode does
    const browser = launchChromium();
    browser.catch(() => undefined);
    try {
      const dev = await startDevConsole({
        manifests: '# each test adds its own, as a file beside this one\n',
        env: {
          DATABASE_URL: database.url,
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_TASK_QUEUE: `console-${randomBytes(4).toString('hex')}`,
          CONSOLE_AUTH_FLOW: opts.flow,
          WEBHOOK_FANOUT_DEV_USER: adminUser.username,
          WEBHOOK_FANOUT_DEV_PASSWORD: adminUser.password,
        },
      });
      started = {
        dev,
        database,
        browser: await browser.catch(async (err: unknown) => {
          await dev.stop();
          throw err;
        }),
      };
    } catch (err) {
      await browser.then((b) => b.close()).catch(() => undefined);
      await database.destroy();
      throw err;
    }
  }, 300_000);

  /** the counters of CSP reports the service counted that are not 0 */
  const cspReported = async () =>
    (await http(get().dev.metricsUrl, { method: 'GET' })).text
      .split('\n')
      .filter((l) => l.startsWith('webhook_fanout_console_csp_violations_total{') && !l.endsWith(' 0'));

  // where each page and the log stood when the test began: the checks after it look at what it did
  let mark: { log: number; csp: string[]; seen: Map<Watched, { requests: number; dialogs: number }> } | undefined;
  beforeEach(async () => {
    if (!started) return;
    mark = {
      log: started.dev.output().length,
      csp: await cspReported(),
      seen: new Map(watched.map((e) => [e.w, { requests: e.w.requests.length, dialogs: e.w.dialogs.length }])),
    };
  });

  afterEach(async () => {
    if (!started || !mark) return;
    const since = mark;
    try {
      expect(await cspReported(), 'CSP violations the console reported').toEqual(since.csp);
      const requested: string[] = [];
      for (const entry of watched) {
        const before = since.seen.get(entry.w) ?? { requests: 0, dialogs: 0 };
        const requests = entry.w.requests.slice(before.requests);
        requested.push(...requests.map((r) => r.url()));
        if (requests.length === 0 || !entry.open) continue;
        // a page this test used
        expect(entry.w.dialogs.slice(before.dialogs), 'dialogs a page opened').toEqual([]);
        // (a page still loading has no document to ask yet: once it has)
        const seen = await entry.w.cspViolations().catch(async () => {
          await entry.w.page.waitForLoadState();
          return entry.w.cspViolations();
        });
        expect(seen, 'CSP violations a page saw').toEqual([]);
      }
      // the token travels in the Authorization header only, and the log never shows it
      for (const u of requested) {
        expect(u).not.toMatch(/access_token/);
        for (const t of tokens) expect(u).not.toContain(t);
      }
      const log = started.dev.output().slice(since.log);
      for (const t of tokens) {
        expect(log).not.toContain(t);
        // nor a recognisable piece of it (its signature)
        expect(log).not.toContain(t.split('.')[2]!);
      }
    } finally {
      for (const entry of watched.filter((e) => e.open)) {
        entry.open = false;
        await entry.w.close().catch(() => undefined);
      }
    }
  }, 60_000);

  afterAll(async () => {
    for (const e of watched) await e.w.close().catch(() => undefined);
    await started?.browser.close();
    await started?.dev.stop();
    await started?.database.destroy();
  }, 60_000);

  return {
    get dev() {
      return get().dev;
    },
    get db() {
      return get().database.db;
    },
    adminUser,
    url,
    admin: async () => {
      const raw = await adminSession();
      const w = await open();
      const origin = new URL(get().dev.url).origin;
      // once per tab (a flag beside it): a reload after the test changed or removed the session keeps its change
      await w.context.addInitScript({
        content: `if (location.origin === ${JSON.stringify(origin)} && !sessionStorage.getItem('test.seeded')) {
          sessionStorage.setItem(${JSON.stringify(SESSION_KEY)}, ${JSON.stringify(raw)});
          sessionStorage.setItem('test.seeded', '1');
        }`,
      });
      return w;
    },
    page: () => open(),
    signedIn: async (user, path = '/') => signInto(await open(), user, path),
    holdToken,
    source: (name, endpoints, o) => addSource({ dev: get().dev, db: get().database.db }, name, endpoints, o),
  };
}
