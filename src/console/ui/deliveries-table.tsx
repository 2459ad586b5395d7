import type { Delivery, Endpoint } from '../api/types.js';
import { to } from '../routes.js';
import { Code, nullable, Status, Time } from './bits.js';

export function DeliveriesTable({
  items,
  caption,
  endpoints,
}: {
  items: readonly Delivery[];
  caption: string;
  /** names for the endpoint ids, when loaded */
  endpoints?: ReadonlyMap<string, Endpoint>;
}) {
  if (items.length === 0) return <p class="empty">No deliveries.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Created</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Source</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last answer</th>
            <th scope="col">Last error</th>
            <th scope="col">Delivery</th>
          </tr>
        </thead>
        <tbody>
          {items.map((d) => (
            <tr key={d.id}>
              <td>
                <Time iso={d.createdAt} />
              </td>
              <td>{endpoints?.get(d.endpointId)?.name ?? <Code>{d.endpointId.slice(0, 8)}</Code>}</td>
              <td>{d.source}</td>
              <td>
                <Status value={d.status} />
              </td>
              <td>{d.attempts}</td>
              <td>{nullable(d.lastResponseStatus)}</td>
              <td class="truncate">{nullable(d.lastError)}</td>
              <td>
                <a href={to.delivery(d.id)} aria-label={`Delivery ${d.id}`}>
                  <Code>{d.id.slice(0, 8)}</Code>
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
