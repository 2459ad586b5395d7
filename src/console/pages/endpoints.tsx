import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { ok, type ApiProblem } from '../api/client.js';
import type { Endpoint } from '../api/types.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { nullable, PageHeading, Status, Table, Time } from '../ui/common-components.js';
import { destinationShown } from '../ui/destination.js';
import { endpointBadge, tokenHost } from '../ui/endpoint-state.js';
import { FilterForm, Pager, useQuery, type FieldSpec } from '../ui/filters.js';
import { asProblem, ProblemView, Show, useLoad, usePolling } from '../ui/load.js';

const FIELDS: readonly FieldSpec[] = [
  { name: 'source', label: 'Source', kind: 'text' },
  {
    name: 'state',
    label: 'State',
    kind: 'select',
    options: [
      { value: 'ACTIVE', label: 'ACTIVE' },
      { value: 'DISABLED', label: 'DISABLED' },
    ],
  },
];

function limits(e: Endpoint): string {
  const parts = [e.rateLimit ? `${e.rateLimit.perSecond}/s` : null, e.maxConcurrency !== null ? `${e.maxConcurrency} in flight` : null];
  const s = parts.filter(Boolean).join(', ');
  return s || 'none';
}

export function EndpointsPage() {
  const { api, canReplay } = useConsole();
  const { route, url } = useLocation();
  const q = useQuery();
  const filters = { source: q.source, state: q.state };
  const page = useLoad(
    () =>
      ok(
        api.GET('/api/endpoints', {
          params: {
            query: {
              ...(q.source ? { source: q.source } : {}),
              ...(q.state === 'ACTIVE' || q.state === 'DISABLED' ? { state: q.state } : {}),
              ...(q.cursor ? { cursor: q.cursor } : {}),
            },
          },
        }),
      ),
    [url],
  );
  const [note, setNote] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  // held deliveries count down while the redriver sends them after an enable
  const draining = page.status === 'ok' && page.data.items.some((e) => e.state === 'ACTIVE' && e.heldDeliveries > 0);
  usePolling(page.reload, draining, 1500);

  const enable = async (e: Endpoint) => {
    setProblem(null);
    try {
      const res = await ok(api.POST('/api/endpoints/{id}/enable', { params: { path: { id: e.id } } }));
      setNote(
        res.wasDisabled
          ? `${e.name} is ACTIVE again; its ${res.endpoint.heldDeliveries} held deliveries are sent, oldest first.`
          : `${e.name} was already ACTIVE.`,
      );
      page.reload();
    } catch (err) {
      setProblem(asProblem(err));
    }
  };

  return (
    <>
      <PageHeading title="Endpoints" />
      <section class="card" aria-label="Endpoints">
        <FilterForm key={url} idPrefix="endpoints" fields={FIELDS} initial={filters} onSubmit={(f) => route(to.endpoints(f))} />
        <p role="status" class="muted">
          {note}
        </p>
        {problem && <ProblemView problem={problem} />}
        <Show value={page}>
          {(data) => (
            <>
              <Table
                caption={'Endpoints'}
                columns={[
                  'Name',
                  'Source / type',
                  'Destination',
                  'State',
                  'Consecutive failures',
                  'Held',
                  'Limits',
                  'Paused until',
                  'Auth / signing',
                  '',
                ]}
                count={data.items.length}
                empty="No endpoints."
              >
                {data.items.map((e) => (
                  <tr key={e.id}>
                    <td>
                      {e.name}
                      {!e.active && <span class="muted"> (inactive)</span>}
                      {e.namespace !== null && (
                        <>
                          <br />
                          <span class="muted">namespace {e.namespace}</span>
                        </>
                      )}
                    </td>
                    <td>
                      {e.source}
                      <br />
                      <span class="muted">{e.eventType ?? 'every type'}</span>
                      {e.filter !== null && (
                        <>
                          <br />
                          <span class="muted">filter </span>
                          <code class="mono break" aria-label={`filter of ${e.name}`}>
                            {e.filter}
                          </code>
                        </>
                      )}
                      {e.transform !== null && (
                        <>
                          <br />
                          <span class="muted">transform </span>
                          <code class="mono break" aria-label={`transform of ${e.name}`}>
                            {e.transform.jsonata}
                          </code>
                        </>
                      )}
                    </td>
                    <td class="mono break">
                      <Destination endpoint={e} />
                    </td>
                    <td>
                      <StateBadge endpoint={e} />
                      {e.deniedReason !== null && (
                        <>
                          <br />
                          <span class="warning" title="Its source's InboundCredential does not allow it: nothing is sent to it">
                            not allowed: {e.deniedReason}
                          </span>
                        </>
                      )}
                      {e.auth.oauth2?.tokenRefusal && (
                        <>
                          <br />
                          {/* the token server's words: attacker text, rendered as text only */}
                          <span
                            class="warning"
                            title="The token endpoint refuses its client credentials: its deliveries wait until the Secret (or the client) is fixed"
                          >
                            Token request refused since <Time iso={e.auth.oauth2.tokenRefusal.since} />:{' '}
                            {e.auth.oauth2.tokenRefusal.message}
                          </span>
                        </>
                      )}
                      {e.auth.oauth2?.tokenUnavailable && (
                        <>
                          <br />
                          {/* what failed, as the worker wrote it (a server's words may be in it): text only */}
                          <span
                            class="warning"
                            title="The token endpoint is unavailable (an error, no answer): its deliveries wait, no attempt spent, until a token is granted"
                          >
                            Token endpoint {tokenHost(e.auth.oauth2.tokenUrl)} unavailable since{' '}
                            <Time iso={e.auth.oauth2.tokenUnavailable.since} />: {e.auth.oauth2.tokenUnavailable.message}
                          </span>
                        </>
                      )}
                      {e.disabledAt && (
                        <>
                          <br />
                          <span class="muted">
                            since <Time iso={e.disabledAt} />
                          </span>
                        </>
                      )}
                    </td>
                    <td>
                      {e.consecutiveFailures}
                      <span class="muted"> / {e.autoDisableAfter === 0 ? 'never disabled' : `disabled at ${e.autoDisableAfter}`}</span>
                    </td>
                    <td>
                      <a
                        href={to.deliveries({ endpointId: e.id, status: 'FAILED' })}
                        aria-label={`${e.heldDeliveries} held deliveries of ${e.name}`}
                      >
                        {e.heldDeliveries}
                      </a>
                    </td>
                    <td>
                      {limits(e)}
                      <br />
                      <span class="muted">
                        {e.maxAttempts} attempts, {e.timeoutSeconds} s timeout
                      </span>
                    </td>
                    <td>{e.pausedUntil ? <Time iso={e.pausedUntil} /> : nullable(null)}</td>
                    <td>
                      {e.auth.type}
                      {e.auth.username ? ` (${e.auth.username})` : ''}
                      {e.auth.oauth2 && (
                        <>
                          <br />
                          <span class="muted">
                            token from {e.auth.oauth2.tokenUrl} as {e.auth.oauth2.clientId} ({e.auth.oauth2.clientAuthentication})
                          </span>
                        </>
                      )}
                      {e.signing.type !== 'NONE' && (
                        <>
                          <br />
                          signed {e.signing.type}
                          {e.signing.previousSecretSet && <span class="muted"> (rotating: previous key too)</span>}
                          {e.signing.publicKeys.map((k) => (
                            <>
                              <br />
                              <code class="muted">{k}</code>
                            </>
                          ))}
                        </>
                      )}
                      {e.tls.clientCertificateExpiresAt && (
                        <>
                          <br />
                          mTLS, certificate until <Time iso={e.tls.clientCertificateExpiresAt} />
                        </>
                      )}
                      {e.tls.caBundleSet && (
                        <>
                          <br />
                          private CA
                        </>
                      )}
                      {e.proxy === 'Direct' && (
                        <>
                          <br />
                          direct, not through the forward proxy
                        </>
                      )}
                      {e.customHeaderNames.length > 0 && <span class="muted"> + {e.customHeaderNames.join(', ')}</span>}
                    </td>
                    <td>
                      {canReplay && e.state === 'DISABLED' && e.deniedReason === null && (
                        <button type="button" onClick={() => enable(e)} aria-label={`Enable ${e.name}`}>
                          Enable
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </Table>
              <Pager
                hasCursor={Boolean(q.cursor)}
                firstHref={to.endpoints(filters)}
                nextHref={data.nextCursor ? to.endpoints({ ...filters, cursor: data.nextCursor }) : null}
              />
            </>
          )}
        </Show>
      </section>
    </>
  );
}

/** How (method, or a queue's or topic's type, muted) and where it sends. */
function Destination({ endpoint }: { endpoint: Endpoint }) {
  const { via, target } = destinationShown(endpoint);
  return endpoint.destination.type === 'HTTP' ? (
    <>
      {via} {target}
    </>
  ) : (
    <>
      <span class="muted">{via} </span>
      {target}
    </>
  );
}

/** The state column's badge: the API's state, or what an ACTIVE endpoint that sends nothing is (ui/endpoint-state.ts). */
function StateBadge({ endpoint }: { endpoint: Endpoint }) {
  const badge = endpointBadge(endpoint);
  return badge.title === undefined ? (
    <Status value={badge.label} />
  ) : (
    <span title={badge.title}>
      <Status value={badge.label} />
    </span>
  );
}
