import { useLocation } from 'preact-iso';
import { ok } from '../api/client.js';
import type { Attention, StatsBucket } from '../api/types.js';
import { useConsole } from '../context.js';
import { to, type Href } from '../routes.js';
import { PageHeading } from '../ui/common-components.js';
import { Show, useLoad, usePolling } from '../ui/load.js';
import { StatsCharts } from '../ui/stats-charts.js';
import { EventsTable } from './events.js';

/** The two ranges of the overview: the last hour by the minute, the last day by the quarter hour. */
const RANGES = {
  hour: { label: 'last hour', ms: 3_600_000, bucket: '1m' as StatsBucket },
  day: { label: 'last day', ms: 86_400_000, bucket: '15m' as StatsBucket },
} as const;
type Range = keyof typeof RANGES;

function Tile({ label, value, href, warn }: { label: string; value: number; href: Href; warn: boolean }) {
  return (
    <a class={warn ? 'tile warn' : 'tile'} href={href}>
      <span class="tile-value">{value}</span> <span class="tile-label">{label}</span>
    </a>
  );
}

/** What needs a person, each count linking to the list it counts; a count above zero is marked. */
const attentionTiles = (c: Attention): Array<{ label: string; value: number; href: Href }> => [
  { label: 'FAILED deliveries', value: c.failedDeliveries, href: to.deliveries({ status: 'FAILED' }) },
  { label: 'held by disabled endpoints', value: c.heldDeliveries, href: to.endpoints({ state: 'DISABLED' }) },
  { label: 'PENDING over a minute', value: c.pendingOverOneMinute, href: to.deliveries({ status: 'PENDING' }) },
  { label: 'disabled endpoints', value: c.disabledEndpoints, href: to.endpoints({ state: 'DISABLED' }) },
  { label: 'paused endpoints', value: c.pausedEndpoints, href: to.endpoints() },
];

export function OverviewPage() {
  const { api } = useConsole();
  const { query } = useLocation();
  const range: Range = query.range === 'day' ? 'day' : 'hour';
  const { label, ms, bucket } = RANGES[range];
  const attention = useLoad(() => ok(api.GET('/api/stats/attention')), []);
  const stats = useLoad(
    () => ok(api.GET('/api/stats/timeseries', { params: { query: { from: new Date(Date.now() - ms).toISOString(), bucket } } })),
    [range],
  );
  const newest = useLoad(() => ok(api.GET('/api/events', { params: { query: { limit: 10 } } })), []);
  // a console left open on the overview keeps up with what arrives
  usePolling(newest.reload, true, 5000);
  usePolling(attention.reload, true, 10_000);
  usePolling(stats.reload, true, range === 'hour' ? 30_000 : 300_000);
  return (
    <>
      <PageHeading title="Overview" />
      <section class="card" aria-labelledby="attention-heading">
        <h2 id="attention-heading">Needs a person</h2>
        <Show value={attention}>
          {(c) => (
            <div class="tiles">
              {attentionTiles(c).map((t) => (
                <Tile key={t.label} {...t} warn={t.value > 0} />
              ))}
            </div>
          )}
        </Show>
      </section>
      <section class="card" aria-labelledby="charts-heading">
        <div class="section-head">
          <h2 id="charts-heading">Traffic, {label}</h2>
          <nav class="range-switch" aria-label="Range">
            {(Object.keys(RANGES) as Range[]).map((r) => (
              <a
                key={r}
                href={to.overview({ range: r === 'hour' ? undefined : r })}
                class={r === range ? 'pill current' : 'pill'}
                aria-current={r === range ? 'true' : undefined}
              >
                {RANGES[r].label}
              </a>
            ))}
          </nav>
        </div>
        <Show value={stats}>{(s) => <StatsCharts stats={s} rangeLabel={label} />}</Show>
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
