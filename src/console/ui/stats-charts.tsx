import { useMemo } from 'preact/hooks';
import type { Timeseries } from '../api/types.js';
import { to } from '../routes.js';
import { Table } from './common-components.js';
import { TimeChart, type Series } from './chart.js';

const TOP = 8;
const pct = (v: number | null) => (v === null ? null : Math.round(v * 1000) / 10);
const ms = (v: number | null) => (v === null ? '—' : `${Math.round(v)} ms`);

/** The overview's charts, from GET /api/stats/timeseries: one value per bucket in every series. */
export function StatsCharts({ stats, rangeLabel }: { stats: Timeseries; rangeLabel: string }) {
  const times = useMemo(() => stats.buckets.map((b) => Date.parse(b) / 1000), [stats]);
  const bySource = useMemo<Series[]>(() => stats.eventsBySource.slice(0, TOP).map((s) => ({ label: s.source, values: s.counts })), [stats]);
  const byOutcome = useMemo<Series[]>(
    () => [
      { label: 'SUCCESS', values: stats.deliveriesByOutcome.SUCCESS },
      { label: 'FAILED', values: stats.deliveriesByOutcome.FAILED },
    ],
    [stats],
  );
  const endpoints = stats.endpoints.slice(0, TOP);
  const failureRate = useMemo<Series[]>(() => endpoints.map((e) => ({ label: e.name, values: e.failureRate.map(pct) })), [stats]);
  const p95 = useMemo<Series[]>(
    () => endpoints.map((e) => ({ label: e.name, values: e.latencyP95Ms.map((v) => (v === null ? null : Math.round(v))) })),
    [stats],
  );

  return (
    <>
      <div class="charts">
        <TimeChart
          id="chart-events"
          title={`Events received per source, ${rangeLabel}`}
          times={times}
          series={bySource}
          empty="No event received in this range."
        />
        <TimeChart
          id="chart-outcomes"
          title={`Deliveries by outcome, ${rangeLabel}`}
          times={times}
          series={byOutcome}
          empty="No delivery ended in this range."
        />
        <TimeChart id="chart-failure" title={`Failure rate per endpoint (%), ${rangeLabel}`} times={times} series={failureRate} unit="%" />
        <TimeChart id="chart-latency" title={`p95 delivery latency per endpoint, ${rangeLabel}`} times={times} series={p95} unit="ms" />
      </div>
      {stats.sourcesOmitted + stats.endpointsOmitted > 0 && (
        <p class="muted">
          Busiest {TOP} shown; {stats.sourcesOmitted} more source(s) and {stats.endpointsOmitted} more endpoint(s) not listed.
        </p>
      )}
      <h3 class="subheading">Per endpoint, {rangeLabel}</h3>
      <Table
        caption={`Deliveries per endpoint, ${rangeLabel}`}
        columns={['Endpoint', 'Source', 'Ended', 'FAILED', 'Failure rate', 'p50 latency', 'p95 latency']}
        count={stats.endpoints.length}
        empty="No delivery ended in this range."
      >
        {stats.endpoints.map((e) => (
          <tr key={e.endpointId}>
            <td>
              <a href={to.deliveries({ endpointId: e.endpointId })} aria-label={`Deliveries of ${e.name}`}>
                {e.name}
              </a>
            </td>
            <td>{e.source}</td>
            <td>{e.total.completed}</td>
            <td>{e.total.failed}</td>
            <td>{e.total.failureRate === null ? '—' : `${pct(e.total.failureRate)} %`}</td>
            <td>{ms(e.total.latencyP50Ms)}</td>
            <td>{ms(e.total.latencyP95Ms)}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}
