import { ok, type Api } from '../api/client.js';
import { useConsole } from '../context.js';
import { to, type Href } from '../routes.js';
import { PageHeading } from '../ui/bits.js';
import { loadEndpoints } from '../ui/endpoint-names.js';
import { Show, useLoad, usePolling } from '../ui/load.js';
import { EventsTable } from './events.js';

const COUNT_PAGE = 200;

/** Up to COUNT_PAGE rows counted; "200+" beyond. */
interface Count {
  n: number;
  more: boolean;
}

async function countDeliveries(api: Api, query: { status: 'FAILED' | 'PENDING'; to?: string }): Promise<Count> {
  const page = await ok(api.GET('/api/deliveries', { params: { query: { ...query, limit: COUNT_PAGE } } }));
  return { n: page.items.length, more: page.nextCursor !== null };
}

async function attention(api: Api) {
  const [failed, stuck, endpoints] = await Promise.all([
    countDeliveries(api, { status: 'FAILED' }),
    countDeliveries(api, { status: 'PENDING', to: new Date(Date.now() - 60_000).toISOString() }),
    loadEndpoints(api),
  ]);
  const all = [...endpoints.values()];
  const disabled = all.filter((e) => e.state === 'DISABLED');
  const now = Date.now();
  return {
    failed,
    stuck,
    held: disabled.reduce((sum, e) => sum + e.heldDeliveries, 0),
    disabled: disabled.length,
    paused: all.filter((e) => e.pausedUntil !== null && Date.parse(e.pausedUntil) > now).length,
  };
}

function Tile({ label, value, href, warn }: { label: string; value: string; href: Href; warn: boolean }) {
  return (
    <a class={warn ? 'tile warn' : 'tile'} href={href}>
      <span class="tile-value">{value}</span>
      <span class="tile-label">{label}</span>
    </a>
  );
}

const shown = (c: Count) => `${c.n}${c.more ? '+' : ''}`;

export function OverviewPage() {
  const { api } = useConsole();
  const counts = useLoad(() => attention(api), []);
  const newest = useLoad(() => ok(api.GET('/api/events', { params: { query: { limit: 10 } } })), []);
  // a console left open on the overview keeps up with what arrives
  usePolling(newest.reload, true, 5000);
  usePolling(counts.reload, true, 10_000);
  return (
    <>
      <PageHeading title="Overview" />
      <section class="card" aria-labelledby="attention-heading">
        <h2 id="attention-heading">Needs a person</h2>
        <Show value={counts}>
          {(c) => (
            <div class="tiles">
              <Tile label="FAILED deliveries" value={shown(c.failed)} href={to.deliveries({ status: 'FAILED' })} warn={c.failed.n > 0} />
              <Tile label="held by disabled endpoints" value={String(c.held)} href={to.endpoints({ state: 'DISABLED' })} warn={c.held > 0} />
              <Tile label="PENDING over a minute" value={shown(c.stuck)} href={to.deliveries({ status: 'PENDING' })} warn={c.stuck.n > 0} />
              <Tile label="disabled endpoints" value={String(c.disabled)} href={to.endpoints({ state: 'DISABLED' })} warn={c.disabled > 0} />
              <Tile label="paused endpoints" value={String(c.paused)} href={to.endpoints()} warn={c.paused > 0} />
            </div>
          )}
        </Show>
      </section>
      <section class="card" aria-labelledby="newest-heading">
        <div class="section-head">
          <h2 id="newest-heading">Newest events</h2>
          <a href={to.events()}>All events</a>
        </div>
        <Show value={newest}>{(page) => <EventsTable items={page.items} caption="The newest events" />}</Show>
      </section>
    </>
  );
}
