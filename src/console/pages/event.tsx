import { useRoute } from 'preact-iso';
import { useState } from 'preact/hooks';
import { ok, type ApiProblem } from '../api/client.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { bytes, Code, Fields, nullable, PageHeading, Status, Table, Time } from '../ui/common-components.js';
import { DeliveriesTable } from '../ui/deliveries-table.js';
import { loadEndpoints } from '../ui/endpoint-names.js';
import { EndpointsWithoutDelivery } from '../ui/endpoints-without-delivery.js';
import { asProblem, ProblemView, Show, useLoad, usePolling } from '../ui/load.js';
import { Payload } from '../ui/payload.js';

export function EventPage() {
  const { api, canReplay } = useConsole();
  const { params } = useRoute();
  const id = params.id ?? '';
  const event = useLoad(() => ok(api.GET('/api/events/{id}', { params: { path: { id } } })), [id]);
  const endpoints = useLoad(() => loadEndpoints(api), []);
  const [replaying, setReplaying] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);

  const pending = event.status === 'ok' && (event.data.status === 'RECEIVED' || event.data.deliveries.some((d) => d.status === 'PENDING'));
  usePolling(event.reload, pending, 1500);

  const replay = async () => {
    setProblem(null);
    setReplaying('Starting the replay…');
    try {
      const started = await ok(api.POST('/api/events/{id}/replay', { params: { path: { id } } }));
      setReplaying(`Replay started for ${started.deliveryIds.length} deliver${started.deliveryIds.length === 1 ? 'y' : 'ies'}.`);
      event.reload();
    } catch (err) {
      setReplaying(null);
      setProblem(asProblem(err));
    }
  };

  return (
    <>
      <PageHeading title="Event">
        <p class="muted">
          <a href={to.events()}>All events</a>
        </p>
      </PageHeading>
      <Show value={event}>
        {(e) => {
          const failed = e.deliveries.filter((d) => d.status === 'FAILED').length;
          return (
            <>
              <section class="card" aria-labelledby="summary-heading">
                <h2 id="summary-heading">Summary</h2>
                <Fields
                  rows={[
                    ['Event id', <Code>{e.id}</Code>],
                    ['Status', <Status value={e.status} />],
                    ['Source', e.source],
                    ['Type', nullable(e.type)],
                    ['External id', nullable(e.externalEventId)],
                    ['Content type', nullable(e.contentType)],
                    ['Size', bytes(e.payloadSize)],
                    ['Received', <Time iso={e.receivedAt} />],
                    ['Published', <Time iso={e.publishedAt} />],
                    ['Completed', <Time iso={e.completedAt} />],
                    ['Workflow', e.workflowId ? <Code>{e.workflowId}</Code> : nullable(null)],
                  ]}
                />
              </section>
              <section class="card" aria-labelledby="deliveries-heading">
                <div class="section-head">
                  <h2 id="deliveries-heading">Deliveries</h2>
                  {canReplay && failed > 0 && (
                    <button type="button" onClick={replay}>
                      Replay {failed} failed deliver{failed === 1 ? 'y' : 'ies'}
                    </button>
                  )}
                </div>
                <p role="status" class="muted">
                  {replaying}
                </p>
                {problem && <ProblemView problem={problem} />}
                <DeliveriesTable
                  items={e.deliveries}
                  caption="Deliveries of this event"
                  {...(endpoints.status === 'ok' ? { endpoints: endpoints.data } : {})}
                />
                <EndpointsWithoutDelivery items={e.endpointsWithoutDelivery} omitted={e.endpointsWithoutDeliveryOmitted} />
              </section>
              <section class="card" aria-labelledby="payload-heading">
                <h2 id="payload-heading">Payload</h2>
                {e.payloadDroppedAt ? (
                  <p class="muted">
                    Removed by the retention policy on <Time iso={e.payloadDroppedAt} />; the event and its deliveries are kept.
                  </p>
                ) : (
                  <Payload payload={e.payload} encoding={e.payloadEncoding} />
                )}
              </section>
              <section class="card" aria-labelledby="headers-heading">
                <h2 id="headers-heading">Headers</h2>
                <p class="muted">As received, without credentials.</p>
                <Table caption="Request headers" columns={['Name', 'Value']}>
                  {Object.entries(e.headers).map(([name, value]) => (
                    <tr key={name}>
                      <td class="mono">{name}</td>
                      <td class="mono break">{value}</td>
                    </tr>
                  ))}
                </Table>
              </section>
            </>
          );
        }}
      </Show>
    </>
  );
}
