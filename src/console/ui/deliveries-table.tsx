import type { Delivery, Endpoint } from '../api/types.js';
import { to } from '../routes.js';
import { Code, nullable, Status, Table, Time } from './common-components.js';
import { tokenWait } from './endpoint-state.js';
import { WaitingBehind } from './ordering.js';
import { TokenWaitNote } from './token-wait.js';

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
  return (
    <Table
      caption={caption}
      columns={['Created', 'Endpoint', 'Source', 'Status', 'Attempts', 'Last answer', 'Last error', 'Delivery']}
      count={items.length}
      empty="No deliveries."
    >
      {items.map((d) => {
        const waitsForToken = tokenWait(d, endpoints?.get(d.endpointId));
        return (
          <tr key={d.id}>
            <td>
              <Time iso={d.createdAt} />
            </td>
            <td>{endpoints?.get(d.endpointId)?.name ?? <Code>{d.endpointId.slice(0, 8)}</Code>}</td>
            <td>{d.source}</td>
            <td>
              <Status value={d.status} />
              {d.status === 'PENDING' && d.ordering?.waitingBehind && (
                <div class="waiting-note">
                  <WaitingBehind id={d.ordering.waitingBehind} short />
                </div>
              )}
              {waitsForToken && (
                <div class="waiting-note">
                  <TokenWaitNote wait={waitsForToken} />
                </div>
              )}
            </td>
            <td>{d.attempts}</td>
            <td>{nullable(d.lastResponseStatus)}</td>
            {/* cut short to fit: the whole error on hover (its page shows it too) */}
            <td class="truncate" title={d.lastError ?? undefined}>
              {nullable(d.lastError)}
            </td>
            <td>
              <a href={to.delivery(d.id)} aria-label={`Delivery ${d.id}`}>
                <Code>{d.id.slice(0, 8)}</Code>
              </a>
            </td>
          </tr>
        );
      })}
    </Table>
  );
}
