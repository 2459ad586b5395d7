import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

// Small pieces every page uses. Everything from the API is rendered as text nodes (JSX children):
// the console never turns API data into markup, URLs or styles.

export function Status({ value }: { value: string }) {
  return <span class={`status status-${value.toLowerCase().replace(/[^a-z]/g, '')}`}>{value}</span>;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const d = new Date(iso);
  return (
    <time dateTime={iso} title={iso}>
      {Number.isNaN(d.getTime()) ? iso : d.toLocaleString()}
    </time>
  );
}

export function Code({ children }: { children: ComponentChildren }) {
  return <code class="mono">{children}</code>;
}

/** Sets the document title and moves focus to the page heading (screen readers hear the new page). */
export function PageHeading({ title, children }: { title: string; children?: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · webhook-fanout`;
    ref.current?.focus();
  }, [title]);
  return (
    <div class="page-heading">
      <h1 tabIndex={-1} ref={ref}>
        {title}
      </h1>
      {children}
    </div>
  );
}

export function Fields({ rows }: { rows: Array<[string, ComponentChildren]> }) {
  return (
    <dl class="fields">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v ?? <span class="muted">—</span>}</dd>
        </div>
      ))}
    </dl>
  );
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<'copied' | 'failed' | null>(null);
  const copy = () => {
    navigator.clipboard.writeText(text).then(
      () => setDone('copied'),
      () => setDone('failed'),
    );
  };
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy}>
        {label}
      </button>
      <span role="status" class="muted">
        {done === 'copied' ? 'Copied' : done === 'failed' ? 'Copy failed' : ''}
      </span>
    </span>
  );
}

export const nullable = (v: string | number | null | undefined): ComponentChildren =>
  v === null || v === undefined || v === '' ? <span class="muted">—</span> : String(v);

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * A table of API rows: its caption (for screen readers; the section heading shows it), column
 * headers, and the rows its caller renders. An empty list says so instead of an empty table.
 */
export function Table({
  caption,
  columns,
  empty,
  count,
  class: className,
  children,
}: {
  caption: string;
  /** header texts; '' for a column of actions (named for screen readers only) */
  columns: readonly string[];
  /** the line shown instead of the table when count is 0 */
  empty?: string;
  count?: number;
  class?: string;
  children: ComponentChildren;
}) {
  if (count === 0 && empty) return <p class="empty">{empty}</p>;
  return (
    <div class="table-wrap">
      <table class={className}>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th scope="col" key={`${i}-${c}`}>
                {c === '' ? <span class="sr-only">Actions</span> : c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
