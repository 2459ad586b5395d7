import { useLocation } from 'preact-iso';
import { ok } from '../api/client.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../api/types.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { PageHeading } from '../ui/common-components.js';
import { DeliveriesTable } from '../ui/deliveries-table.js';
import { endpointField, loadEndpoints } from '../ui/endpoint-names.js';
import { FilterForm, Pager, useQuery, type FieldSpec } from '../ui/filters.js';
import { Show, useLoad } from '../ui/load.js';

export function DeliveriesPage() {
  const { api } = useConsole();
  const { route, url } = useLocation();
  const q = useQuery();
  const endpoints = useLoad(() => loadEndpoints(api), []);
  const filters = {
    status: q.status,
    source: q.source,
    endpointId: q.endpointId,
    eventId: q.eventId,
    eventType: q.eventType,
    from: q.from,
    to: q.to,
  };
  const fields: FieldSpec[] = [
    { name: 'status', label: 'Status', kind: 'select', options: DELIVERY_STATUSES.map((s) => ({ value: s, label: s })) },
    { name: 'source', label: 'Source', kind: 'text' },
    endpointField(endpoints),
    { name: 'eventId', label: 'Event id', kind: 'text' },
    { name: 'eventType', label: 'Event type', kind: 'text' },
    { name: 'from', label: 'Created from', kind: 'datetime' },
    { name: 'to', label: 'Created before', kind: 'datetime' },
  ];
  const page = useLoad(
    () =>
      ok(
        api.GET('/api/deliveries', {
          params: {
            query: {
              ...(q.status ? { status: q.status as DeliveryStatus } : {}),
              ...(q.source ? { source: q.source } : {}),
              ...(q.endpointId ? { endpointId: q.endpointId } : {}),
              ...(q.eventId ? { eventId: q.eventId } : {}),
              ...(q.eventType ? { eventType: q.eventType } : {}),
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
      <PageHeading title="Deliveries" />
      <section class="card" aria-label="Deliveries, newest first">
        <FilterForm key={url} idPrefix="deliveries" fields={fields} initial={filters} onSubmit={(f) => route(to.deliveries(f))} />
        <Show value={page}>
          {(data) => (
            <>
              <DeliveriesTable
                items={data.items}
                caption="Deliveries, newest first"
                {...(endpoints.status === 'ok' ? { endpoints: endpoints.data } : {})}
              />
              <Pager
                hasCursor={Boolean(q.cursor)}
                firstHref={to.deliveries(filters)}
                nextHref={data.nextCursor ? to.deliveries({ ...filters, cursor: data.nextCursor }) : null}
              />
            </>
          )}
        </Show>
      </section>
    </>
  );
}
