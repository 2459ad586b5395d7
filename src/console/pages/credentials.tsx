import { useLocation } from 'preact-iso';
import { ok } from '../api/client.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { nullable, PageHeading, Table, Time } from '../ui/common-components.js';
import { FilterForm, Pager, useQuery } from '../ui/filters.js';
import { Show, useLoad } from '../ui/load.js';

const rule = (r: unknown) => (r === null || r === undefined ? nullable(null) : <span class="mono">{JSON.stringify(r)}</span>);

export function CredentialsPage() {
  const { api } = useConsole();
  const { route, url } = useLocation();
  const q = useQuery();
  const page = useLoad(
    () =>
      ok(
        api.GET('/api/inbound-credentials', {
          params: { query: { ...(q.source ? { source: q.source } : {}), ...(q.cursor ? { cursor: q.cursor } : {}) } },
        }),
      ),
    [url],
  );
  return (
    <>
      <PageHeading title="Inbound credentials" />
      <section class="card" aria-label="Inbound credentials">
        <p class="muted">Who may send webhooks to each source (HTTP Basic). Passwords are never shown.</p>
        <FilterForm
          key={url}
          idPrefix="credentials"
          fields={[{ name: 'source', label: 'Source', kind: 'text' }]}
          initial={{ source: q.source }}
          onSubmit={(f) => route(to.credentials(f))}
        />
        <Show value={page}>
          {(data) => (
            <>
              <Table
                caption={'Inbound credentials'}
                columns={['Source', 'Namespace', 'Username', 'Event id from', 'Event type from', 'Managed by', 'Updated']}
                count={data.items.length}
                empty="No inbound credentials."
              >
                {data.items.map((c) => (
                  <tr key={c.id}>
                    <td>
                      <a href={to.events({ source: c.source })} aria-label={`Events of ${c.source}`}>
                        {c.source}
                      </a>
                    </td>
                    <td>{nullable(c.namespace)}</td>
                    <td>{c.username}</td>
                    <td>{rule(c.eventIdRule)}</td>
                    <td>{rule(c.eventTypeRule)}</td>
                    <td>{nullable(c.managedBy)}</td>
                    <td>
                      <Time iso={c.updatedAt} />
                    </td>
                  </tr>
                ))}
              </Table>
              <Pager
                hasCursor={Boolean(q.cursor)}
                firstHref={to.credentials({ source: q.source })}
                nextHref={data.nextCursor ? to.credentials({ source: q.source, cursor: data.nextCursor }) : null}
              />
            </>
          )}
        </Show>
      </section>
    </>
  );
}
