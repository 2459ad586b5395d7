import type { ComponentChildren } from 'preact';
import { useRoute } from 'preact-iso';
import { useState } from 'preact/hooks';
import { ok, type ApiProblem } from '../api/client.js';
import type { Endpoint } from '../api/types.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { bytes, Code, Fields, nullable, PageHeading, Status, Table, Time } from '../ui/common-components.js';
import { destinationShown } from '../ui/destination.js';
import { loadEndpoints } from '../ui/endpoint-names.js';
import { tokenWait } from '../ui/endpoint-state.js';
import { asProblem, ProblemView, Show, useLoad, usePolling } from '../ui/load.js';
import { holdsItsKey, OrderingKey, OrderingState } from '../ui/ordering.js';
import { TokenWaitNote } from '../ui/token-wait.js';

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/**
 * "name (POST https://...)", or "name (Kafka kafka://...)" for a destination that is not HTTP; the
 * name a link to the endpoint's deliveries, the console's page of an endpoint (as on the overview).
 */
function EndpointLine({ e }: { e: Endpoint }) {
  const { via, target } = destinationShown(e);
  return (
    <>
      <a href={to.deliveries({ endpointId: e.id })} aria-label={`Deliveries of ${e.name}`}>
        {e.name}
      </a>{' '}
      ({via} {target})
    </>
  );
}

export function DeliveryPage() {
  const { api, canReplay } = useConsole();
  const { params } = useRoute();
  const id = params.id ?? '';
  const delivery = useLoad(async () => {
    // one after the other: an attempt is recorded in the statement that settles the delivery, so
    // the log read after the delivery holds every attempt the delivery counts
    const d = await ok(api.GET('/api/deliveries/{id}', { params: { path: { id } } }));
    const attempts = await ok(api.GET('/api/deliveries/{id}/attempts', { params: { path: { id } } }));
    return { d, attempts: attempts.items };
  }, [id]);
  const endpoints = useLoad(() => loadEndpoints(api), []);
  const [note, setNote] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirmingSkip, setConfirmingSkip] = useState(false);

  // a replayed or retrying delivery: follow it until it settles
  usePolling(
    delivery.reload,
    delivery.status === 'ok' && (delivery.data.d.status === 'PENDING' || delivery.data.attempts.length < delivery.data.d.attempts),
    1000,
  );

  const replay = async () => {
    setProblem(null);
    setBusy(true);
    try {
      await ok(api.POST('/api/deliveries/{id}/replay', { params: { path: { id } } }));
      setNote('Replay started: the delivery is PENDING until its new attempt ends.');
      delivery.reload();
    } catch (err) {
      setProblem(asProblem(err));
    } finally {
      setBusy(false);
    }
  };

  // an ordered delivery that holds its key after it FAILED: skipped, the ones behind it go (docs/ordering.md)
  const skip = async () => {
    setProblem(null);
    setBusy(true);
    try {
      await ok(api.POST('/api/deliveries/{id}/skip', { params: { path: { id } } }));
      setConfirmingSkip(false);
      setNote('Skipped: the delivery stays FAILED and no longer holds its key; the next delivery of its key starts.');
      delivery.reload();
    } catch (err) {
      setProblem(asProblem(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageHeading title="Delivery" />
      <Show value={delivery}>
        {({ d, attempts }) => {
          const endpoint = endpoints.status === 'ok' ? endpoints.data.get(d.endpointId) : undefined;
          const transformed = attempts.some((a) => a.requestBody !== null);
          const waitsForToken = tokenWait(d, endpoint);
          return (
            <>
              <section class="card" aria-labelledby="summary-heading">
                <div class="section-head">
                  <h2 id="summary-heading">Summary</h2>
                  <div class="actions">
                    {canReplay && d.status === 'FAILED' && (
                      <button type="button" onClick={replay} disabled={busy}>
                        Replay delivery
                      </button>
                    )}
                    {canReplay && holdsItsKey(d) && !confirmingSkip && (
                      <>
                        {' '}
                        <button type="button" class="secondary" onClick={() => setConfirmingSkip(true)} disabled={busy}>
                          Skip delivery…
                        </button>
                      </>
                    )}
                  </div>
                </div>
                {canReplay && holdsItsKey(d) && confirmingSkip && (
                  <div class="confirm" role="group" aria-label="Confirm the skip">
                    <p>
                      Skip this delivery? It stays FAILED and stops holding its key: the deliveries of its key waiting behind it are sent,
                      in order, without it. A later replay of it is sent out of order.
                    </p>
                    <button type="button" class="danger" onClick={skip} disabled={busy}>
                      Confirm skip
                    </button>{' '}
                    <button type="button" class="secondary" onClick={() => setConfirmingSkip(false)}>
                      Cancel
                    </button>
                  </div>
                )}
                <p role="status" class="muted">
                  {note}
                </p>
                {problem && <ProblemView problem={problem} />}
                <Fields
                  rows={[
                    ['Delivery id', <Code>{d.id}</Code>],
                    [
                      'Status',
                      <>
                        <Status value={d.status} />
                        {waitsForToken && (
                          <div class="note-below">
                            <TokenWaitNote wait={waitsForToken} full />
                          </div>
                        )}
                      </>,
                    ],
                    [
                      'Event',
                      <a href={to.event(d.eventId)}>
                        <Code>{d.eventId}</Code>
                      </a>,
                    ],
                    [
                      'Endpoint',
                      endpoint ? (
                        <EndpointLine e={endpoint} />
                      ) : (
                        <a href={to.deliveries({ endpointId: d.endpointId })} aria-label={`Deliveries of endpoint ${d.endpointId}`}>
                          <Code>{d.endpointId}</Code>
                        </a>
                      ),
                    ],
                    ['Source', d.source],
                    ...(d.ordering
                      ? ([
                          ['Ordering key', <OrderingKey value={d.ordering.key} />],
                          ['Order', <OrderingState d={{ ...d, ordering: d.ordering }} />],
                        ] as Array<[string, ComponentChildren]>)
                      : []),
                    ['Attempts', String(d.attempts)],
                    ['Last response status', nullable(d.lastResponseStatus)],
                    ['Last error', nullable(d.lastError)],
                    ['Created', <Time iso={d.createdAt} />],
                    ['Last attempt', <Time iso={d.lastAttemptAt} />],
                    ['Completed', <Time iso={d.completedAt} />],
                  ]}
                />
              </section>
              <section class="card" aria-labelledby="attempts-heading">
                <h2 id="attempts-heading">Attempt log</h2>
                <Table
                  caption={'Attempts, in order'}
                  columns={[
                    'Attempt',
                    'Outcome',
                    'Response status',
                    'Duration',
                    'Started',
                    'Error',
                    'Response body',
                    // the endpoint's transform made what was sent (docs/content-routing.md)
                    ...(transformed ? ['Body sent (transformed)'] : []),
                  ]}
                  count={attempts.length}
                  empty="No attempt yet."
                  class="attempts"
                >
                  {attempts.map((a) => (
                    <tr key={a.attempt}>
                      <td>{a.attempt}</td>
                      <td>
                        <Status value={a.outcome} />
                      </td>
                      <td>{nullable(a.responseStatus)}</td>
                      <td>{a.durationMs === null ? nullable(null) : `${a.durationMs} ms`}</td>
                      <td>
                        <Time iso={a.startedAt} />
                      </td>
                      <td class="break">{nullable(a.error)}</td>
                      <td>
                        {a.responseBody === null || a.responseBody === '' ? (
                          nullable(null)
                        ) : (
                          <pre class="code-block small" tabIndex={0} aria-label={`Response body of attempt ${a.attempt}`}>
                            {a.responseBody}
                          </pre>
                        )}
                      </td>
                      {transformed && (
                        <td>
                          {a.requestBody === null ? (
                            nullable(null)
                          ) : (
                            <pre class="code-block small" tabIndex={0} aria-label={`Body sent by attempt ${a.attempt}`}>
                              {a.requestBody}
                            </pre>
                          )}
                          {a.requestBody !== null && a.requestBodyBytes !== null && a.requestBodyBytes > utf8Bytes(a.requestBody) && (
                            <span class="muted">the first part of {bytes(a.requestBodyBytes)}</span>
                          )}
                        </td>
                      )}
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
