import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { BASE } from './config.js';
import { useConsole } from './context.js';
import { BulkReplayPage } from './pages/bulk-replay.js';
import { CredentialsPage } from './pages/credentials.js';
import { DeliveriesPage } from './pages/deliveries.js';
import { DeliveryPage } from './pages/delivery.js';
import { EndpointsPage } from './pages/endpoints.js';
import { EventPage } from './pages/event.js';
import { EventsPage } from './pages/events.js';
import { OverviewPage } from './pages/overview.js';
import { ROUTES, to, type Href } from './routes.js';
import { ok } from './api/client.js';
import { PageHeading } from './ui/common-components.js';
import { useLoad } from './ui/load.js';

function NavLink({ href, label, match }: { href: Href; label: string; match: (path: string) => boolean }) {
  const { path } = useLocation();
  const current = match(path);
  return (
    <a href={href} class={current ? 'nav-link current' : 'nav-link'} aria-current={current ? 'page' : undefined}>
      {label}
    </a>
  );
}

const startsWith = (prefix: string) => (path: string) => path === prefix || path.startsWith(`${prefix}/`);

/**
 * The namespaces the login is scoped to, as the API read them from the token (GET /api/me): a
 * tenant sees only these namespaces' endpoints, credentials, their deliveries and events.
 */
function Namespaces() {
  const { api } = useConsole();
  const me = useLoad(() => ok(api.GET('/api/me')), []);
  if (me.status !== 'ok' || me.data.namespaces === null) return null;
  const list = me.data.namespaces;
  return (
    <span class="namespaces" data-testid="namespaces" title="This login sees only these namespaces (a tenant's token)">
      {list.length === 0 ? 'no namespace' : `${list.length === 1 ? 'namespace' : 'namespaces'} ${list.join(', ')}`}
    </span>
  );
}

/** Where the top bar puts the login above the pages' links (styles.css has the same width). */
const NARROW_SCREEN = '(max-width: 640px)';

/** Whether the window matches a media query now, following its changes. */
function useMediaQuery(query: string): boolean {
  const [matches, setMatches] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const list = matchMedia(query);
    const changed = () => setMatches(list.matches);
    list.addEventListener('change', changed);
    changed();
    return () => list.removeEventListener('change', changed);
  }, [query]);
  return matches;
}

function Header() {
  const { claims, canReplay, logout } = useConsole();
  // on a phone the login sits on the name's line, above the links: it comes before them in the
  // document too, so that Tab goes where the eye does (CSS order moved the box, not the focus)
  const narrow = useMediaQuery(NARROW_SCREEN);
  const nav = (
    <nav key="nav" aria-label="Console">
      <NavLink href={to.overview()} label="Overview" match={(p) => p === `${BASE}/` || p === BASE} />
      <NavLink href={to.events()} label="Events" match={startsWith(`${BASE}/events`)} />
      <NavLink href={to.deliveries()} label="Deliveries" match={startsWith(`${BASE}/deliveries`)} />
      {canReplay && <NavLink href={to.replay()} label="Bulk replay" match={startsWith(`${BASE}/replay`)} />}
      <NavLink href={to.endpoints()} label="Endpoints" match={startsWith(`${BASE}/endpoints`)} />
      <NavLink href={to.credentials()} label="Credentials" match={startsWith(`${BASE}/credentials`)} />
    </nav>
  );
  const user = (
    <div key="user" class="user">
      <span class="muted" title={[...claims.permissions].join(' ')}>
        {claims.subject}
        {canReplay ? '' : ' (read-only)'}
      </span>
      <Namespaces />
      <button type="button" class="secondary" onClick={logout}>
        Log out
      </button>
    </div>
  );
  return (
    <header class="topbar">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <span class="brand">webhook-fanout</span>
      {narrow ? [user, nav] : [nav, user]}
    </header>
  );
}

function NotFound() {
  return (
    <>
      <PageHeading title="Page not found" />
      <p>
        There is no such page in the console. <a href={to.overview()}>Go to the overview</a>.
      </p>
    </>
  );
}

export function App() {
  return (
    <LocationProvider scope={BASE}>
      <Header />
      <main id="main" class="content">
        <Router>
          <Route path={ROUTES.overview} component={OverviewPage} />
          <Route path={ROUTES.events} component={EventsPage} />
          <Route path={ROUTES.event} component={EventPage} />
          <Route path={ROUTES.deliveries} component={DeliveriesPage} />
          <Route path={ROUTES.delivery} component={DeliveryPage} />
          <Route path={ROUTES.replay} component={BulkReplayPage} />
          <Route path={ROUTES.endpoints} component={EndpointsPage} />
          <Route path={ROUTES.credentials} component={CredentialsPage} />
          <Route default component={NotFound} />
        </Router>
      </main>
    </LocationProvider>
  );
}
