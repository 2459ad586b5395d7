import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import type { Href, Query } from '../routes.js';
import { fromLocalInput, toLocalInput } from './local-time.js';

// Filter forms whose state is the page's URL (a filtered list is a link one can share).

export interface FieldSpec {
  name: string;
  label: string;
  kind: 'text' | 'select' | 'datetime' | 'number';
  options?: ReadonlyArray<{ value: string; label: string }>;
  placeholder?: string;
  hint?: string;
}

/** The form's values are the URL's query; submitting navigates (cursor dropped: a new list). */
export function FilterForm({
  fields,
  initial,
  onSubmit,
  submitLabel = 'Apply filters',
  idPrefix,
  children,
}: {
  fields: readonly FieldSpec[];
  initial: Record<string, string | undefined>;
  onSubmit(values: Query): void;
  submitLabel?: string;
  idPrefix: string;
  children?: ComponentChildren;
}) {
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(fields.map((f) => [f.name, f.kind === 'datetime' ? toLocalInput(initial[f.name]) : (initial[f.name] ?? '')])),
  );
  const set = (name: string) => (e: Event) => setValues((v) => ({ ...v, [name]: (e.currentTarget as HTMLInputElement).value }));
  const submit = (e: Event) => {
    e.preventDefault();
    const q: Query = {};
    for (const f of fields)
      q[f.name] = f.kind === 'datetime' ? fromLocalInput(values[f.name] ?? '') : (values[f.name] ?? '').trim() || undefined;
    onSubmit(q);
  };
  return (
    <form class="filters" onSubmit={submit} aria-label="Filters">
      {fields.map((f) => {
        const id = `${idPrefix}-${f.name}`;
        return (
          <div class="field" key={f.name}>
            <label for={id}>{f.label}</label>
            {f.kind === 'select' ? (
              <select id={id} value={values[f.name]} onChange={set(f.name)}>
                <option value="">any</option>
                {f.options?.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={id}
                type={f.kind === 'datetime' ? 'datetime-local' : f.kind === 'number' ? 'number' : 'text'}
                value={values[f.name]}
                placeholder={f.placeholder}
                onInput={set(f.name)}
                aria-describedby={f.hint ? `${id}-hint` : undefined}
              />
            )}
            {f.hint && (
              <span class="hint" id={`${id}-hint`}>
                {f.hint}
              </span>
            )}
          </div>
        );
      })}
      <div class="field actions">
        <button type="submit">{submitLabel}</button>
        {children}
      </div>
    </form>
  );
}

/** The current URL's query, as the page's filter values. */
export function useQuery(): Record<string, string | undefined> {
  return useLocation().query;
}

export function Pager({ nextHref, firstHref, hasCursor }: { nextHref: Href | null; firstHref: Href; hasCursor: boolean }) {
  if (!nextHref && !hasCursor) return null;
  return (
    <nav class="pager" aria-label="Pages">
      {hasCursor && <a href={firstHref}>First page</a>}
      {nextHref ? <a href={nextHref}>Next page</a> : <span class="muted">Last page</span>}
    </nav>
  );
}
