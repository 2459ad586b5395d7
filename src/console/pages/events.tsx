import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { ok } from '../api/client.js';
import { EVENT_STATUSES, type EventSummary } from '../api/types.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { bytes, Code, nullable, PageHeading, Status, Table, Time } from '../ui/common-components.js';
import { FilterForm, Pager, useQuery, type FieldSpec } from '../ui/filters.js';
import { ProblemView, Show, useLoad, asProblem } from '../ui/load.js';
import type { ApiProblem } from '../api/client.js';

const FIELDS: readonly FieldSpec[] = [
  { name: 'source', label: 'Source', kind: 'text', placeholder: 'e.g. stripe' },
  { name: 'type', label: 'Event type', kind: 'text', placeholder: 'e.g. order.created' },
  { name: 'status', label: 'Status', kind: 'select', options: EVENT_STATUSES.map((s) => ({ value: s, label: s })) },
  { name: 'from', label: 'Received from', kind: 'datetime' },
  { name: 'to', label: 'Received before', kind: 'datetime' },
];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What an operational event is about (the API reads it from its payload): its endpoint, a link to
 * that endpoint's deliveries, and its delivery, a link to it. Names are text, never markup.
 */
function About({ about }: { about: EventSummary['about'] }) {
  if (about === null) return nullable(null);
  return (
    <>
      {about.endpoint && (
        <a href={to.deliveries({ endpointId: about.endpoint.id })} aria-label={`Deliveries of ${about.endpoint.name}`}>
          {about.endpoint.name}
        </a>
      )}
      {about.endpoint && about.deliveryId && ', '}
      {about.deliveryId && (
        <a href={to.delivery(about.deliveryId)} aria-label={`Delivery ${about.deliveryId}`}>
          delivery <Code>{about.deliveryId.slice(0, 8)}</Code>
        </a>
      )}
    </>
  );
}

export function EventsTable({ items, caption }: { items: readonly EventSummary[]; caption: string }) {
  // operational events (source webhook-fanout) name the endpoint and delivery they are about
  const about = items.some((e) => e.about !== null);
  return (
    <Table
      caption={caption}
      columns={['Received', 'Source', 'Type', 'Status', ...(about ? ['About'] : []), 'External id', 'Size', 'Event']}
      count={items.length}
      empty="No events."
    >
      {items.map((e) => (
        <tr key={e.id}>
          <td>
            <Time iso={e.receivedAt} />
          </td>
          <td>{e.source}</td>
          <td>{nullable(e.type)}</td>
          <td>
            <Status value={e.status} />
          </td>
          {about && (
            <td>
              <About about={e.about} />
            </td>
          )}
          <td class="mono truncate" title={e.externalEventId ?? undefined}>
            {nullable(e.externalEventId)}
          </td>
          <td>{bytes(e.payloadSize)}</td>
          <td>
            <a href={to.event(e.id)} aria-label={`Event ${e.id}`}>
              <Code>{e.id.slice(0, 8)}</Code>
            </a>
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** Opens an event by its id, or by the id its sender gave it (with the source). */
function Lookup() {
  const { api } = useConsole();
  const { route } = useLocation();
  const [id, setId] = useState('');
  const [source, setSource] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);

  const find = async (e: Event) => {
    e.preventDefault();
    setMessage(null);
    setProblem(null);
    const value = id.trim();
    if (!value) return setMessage('Enter an event id, or an external id with its source.');
    try {
      if (UUID.test(value) && !source.trim()) {
        const found = await ok(api.GET('/api/events/{id}', { params: { path: { id: value } } }));
        return route(to.event(found.id));
      }
      if (!source.trim()) return setMessage('An external id is unique per source: enter the source too.');
      const page = await ok(api.GET('/api/events', { params: { query: { source: source.trim(), externalId: value, limit: 1 } } }));
      const first = page.items[0];
      if (first) return route(to.event(first.id));
      setMessage(`No event of source "${source.trim()}" with external id "${value}".`);
    } catch (err) {
      const p = asProblem(err);
      if (p.status === 404) setMessage(`No event with id ${value}.`);
      else setProblem(p);
    }
  };

  return (
    <form class="lookup" onSubmit={find} aria-label="Find an event">
      <div class="field">
        <label for="lookup-id">Event id or external id</label>
        <input id="lookup-id" value={id} onInput={(e) => setId(e.currentTarget.value)} placeholder="uuid, or the sender's id" />
      </div>
      <div class="field">
        <label for="lookup-source">Source (for an external id)</label>
        <input id="lookup-source" value={source} onInput={(e) => setSource(e.currentTarget.value)} />
      </div>
      <div class="field actions">
        <button type="submit">Find event</button>
      </div>
      <div class="lookup-result" role="status">
        {message}
      </div>
      {problem && <ProblemView problem={problem} />}
    </form>
  );
}

export function EventsPage() {
  const { api } = useConsole();
  const { route, url } = useLocation();
  const q = useQuery();
  const filters = { source: q.source, type: q.type, status: q.status, from: q.from, to: q.to };
  const page = useLoad(
    () =>
      ok(
        api.GET('/api/events', {
          params: {
            query: {
              ...(q.source ? { source: q.source } : {}),
              ...(q.type ? { type: q.type } : {}),
              ...(q.status ? { status: q.status as EventSummary['status'] } : {}),
              ...(q.from ? { from: q.from } : {}),
              ...(q.to ? { to: q.to } : {}),
              ...(q.cursor ? { cursor: q.cursor } : {}),
            },
          },
        }),
      ),
    [url],
  );
  return (
    <>
      <PageHeading title="Events" />
      <section aria-labelledby="find-heading" class="card">
        <h2 id="find-heading">Find an event</h2>
        <Lookup />
      </section>
      <section aria-labelledby="list-heading" class="card">
        <h2 id="list-heading">Newest first</h2>
        <FilterForm key={url} idPrefix="events" fields={FIELDS} initial={filters} onSubmit={(f) => route(to.events(f))} />
        <Show value={page}>
          {(data) => (
            <>
              <EventsTable items={data.items} caption="Events, newest first" />
              <Pager
                hasCursor={Boolean(q.cursor)}
                firstHref={to.events(filters)}
                nextHref={data.nextCursor ? to.events({ ...filters, cursor: data.nextCursor }) : null}
              />
            </>
          )}
        </Show>
      </section>
    </>
  );
}
