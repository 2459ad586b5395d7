import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { Table } from './common-components.js';
import { fixedYRange, isEmptyRange, yAxisSteps, type Series } from './chart-range.js';

export type { Series };

const PALETTE = ['#1f4e8c', '#c2410c', '#15803d', '#7c3aed', '#b91c1c', '#0e7490', '#a16207', '#be185d'];

/**
 * A time-series chart (uPlot on a canvas), with its numbers in a table under a disclosure: a
 * screen reader or keyboard user gets the same figures as the picture. An empty range says so
 * (`empty`) instead of drawing an axis.
 */
export function TimeChart({
  title,
  times,
  series,
  unit,
  id,
  empty = 'Nothing in this range.',
}: {
  title: string;
  /** bucket starts, epoch seconds */
  times: readonly number[];
  series: readonly Series[];
  unit?: string;
  id: string;
  empty?: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const nothing = isEmptyRange(series, unit);
  useEffect(() => {
    const el = host.current;
    if (!el || nothing) return;
    const width = () => Math.max(280, el.clientWidth);
    const yRange = fixedYRange(unit);
    const ySteps = yAxisSteps(unit);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        scales: { x: { time: true }, ...(yRange ? { y: { range: yRange } } : {}) },
        // uPlot's legend toggles series on click only (no keyboard): a static legend below instead
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: PALETTE[i % PALETTE.length] ?? '#1f4e8c',
            width: 2,
            // a ratio or latency exists only in buckets with deliveries: isolated values need their points
            points: { show: times.length < 40 || s.values.filter((v) => v !== null).length < 30, size: 6 },
            ...(unit ? { value: (_u: uPlot, v: number | null) => (v === null ? '—' : `${v} ${unit}`) } : {}),
          })),
        ],
        axes: [
          {},
          {
            size: unit === 'ms' ? 84 : 60,
            ...(unit ? { values: (_u: uPlot, ticks: number[]) => ticks.map((t) => `${t} ${unit}`) } : {}),
            // a count's ticks at whole numbers only: no 0.25 delivery
            ...(ySteps ? { incrs: ySteps.slice() } : {}),
          },
        ],
      },
      [times.slice(), ...series.map((s) => s.values.slice())] as uPlot.AlignedData,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, unit, nothing]);

  return (
    <figure class="chart" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{title}</figcaption>
      {nothing ? (
        <p class="empty">{empty}</p>
      ) : (
        <>
          <div ref={host} aria-hidden="true" />
          <ul class="legend" aria-hidden="true">
            {series.map((s, i) => (
              <li key={s.label}>
                <span class="swatch" style={{ backgroundColor: PALETTE[i % PALETTE.length] }} />
                {s.label}
              </li>
            ))}
          </ul>
        </>
      )}
      {!nothing && (
        <details>
          <summary>Figures</summary>
          <Table caption={title} columns={['From', ...series.map((s) => s.label)]}>
            {times.map((t, i) => (
              <tr key={t}>
                <td>{new Date(t * 1000).toLocaleString()}</td>
                {series.map((s) => (
                  <td key={s.label}>{s.values[i] ?? '—'}</td>
                ))}
              </tr>
            ))}
          </Table>
        </details>
      )}
    </figure>
  );
}
