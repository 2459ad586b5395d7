import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { ok, type ApiProblem } from '../api/client.js';
import type { BulkReplayResult } from '../api/types.js';
import { useConsole } from '../context.js';
import { to } from '../routes.js';
import { Code, PageHeading } from '../ui/common-components.js';
import { DeliveriesTable } from '../ui/deliveries-table.js';
import { endpointField, loadEndpoints } from '../ui/endpoint-names.js';
import { FilterForm, useQuery, type FieldSpec } from '../ui/filters.js';
import { asProblem, ProblemView, Show, useLoad } from '../ui/load.js';

const LIST_MAX = 200;

/**
 * Bulk replay in two steps: a dry run (how many FAILED deliveries match, and which: the newest of
 * them listed), then an explicit confirmation that replays them. The filters are in the URL.
 */
export function BulkReplayPage() {
  const { api, canReplay } = useConsole();
  const { route, url } = useLocation();
  const q = useQuery();
  const endpoints = useLoad(() => loadEndpoints(api), []);
  const limit = q.limit && /^\d+$/.test(q.limit) ? Number(q.limit) : 100;
  // the same filters narrow the replay and the dry run's list of what it would take
  const filters = {
    ...(q.source ? { source: q.source } : {}),
    ...(q.endpointId ? { endpointId: q.endpointId } : {}),
    ...(q.eventType ? { eventType: q.eventType } : {}),
    ...(q.from ? { from: q.from } : {}),
    ...(q.to ? { to: q.to } : {}),
  };
  const body = { ...filters, limit };
  const dry = q.run === 'dry';
  const dryRun = useLoad(async () => {
    if (!dry) return null;
    const [result, which] = await Promise.all([
      ok(api.POST('/api/deliveries/replay', { body: { ...body, dryRun: true } })),
      ok(
        api.GET('/api/deliveries', {
          params: { query: { ...filters, status: 'FAILED', limit: Math.min(limit, LIST_MAX) } },
        }),
      ),
    ]);
    return { result, which: which.items };
  }, [url]);
  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useState<BulkReplayResult | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);

  const fields: FieldSpec[] = [
    { name: 'source', label: 'Source', kind: 'text' },
    endpointField(endpoints),
    { name: 'eventType', label: 'Event type', kind: 'text' },
    { name: 'from', label: 'Created from', kind: 'datetime' },
    { name: 'to', label: 'Created before', kind: 'datetime' },
    { name: 'limit', label: 'At most', kind: 'number', hint: 'newest first, 1 to 1000' },
  ];

  const replay = async () => {
    setProblem(null);
    setBusy(true);
    try {
      setDone(await ok(api.POST('/api/deliveries/replay', { body: { ...body, dryRun: false } })));
      setConfirming(false);
    } catch (err) {
      setProblem(asProblem(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageHeading title="Bulk replay" />
      {!canReplay && (
        <div class="problem" role="alert">
          <p class="problem-title">Bulk replay needs the replay:webhooks permission, which this login does not have.</p>
        </div>
      )}
      <section class="card" aria-labelledby="which-heading">
        <h2 id="which-heading">Which FAILED deliveries</h2>
        <FilterForm
          key={url}
          idPrefix="replay"
          fields={fields}
          initial={{ ...q, limit: String(limit) }}
          submitLabel="Dry run"
          onSubmit={(f) => {
            setDone(null);
            setConfirming(false);
            route(to.replay({ ...f, run: 'dry' }));
          }}
        />
      </section>
      {dry && (
        <section class="card" aria-labelledby="dry-heading">
          <h2 id="dry-heading">Dry run</h2>
          <Show value={dryRun}>
            {(data) =>
              data && (
                <>
                  <p class="dry-run-summary" role="status">
                    <strong>{data.result.matched}</strong> FAILED deliver{data.result.matched === 1 ? 'y matches' : 'ies match'}; a replay
                    would take the newest <strong>{data.result.replayed}</strong>.
                  </p>
                  <DeliveriesTable
                    items={data.which}
                    caption="FAILED deliveries matching the filters, newest first"
                    {...(endpoints.status === 'ok' ? { endpoints: endpoints.data } : {})}
                  />
                  {canReplay && data.result.replayed > 0 && !done && (
                    <div class="confirm">
                      {!confirming ? (
                        <button type="button" onClick={() => setConfirming(true)}>
                          Replay {data.result.replayed} deliveries…
                        </button>
                      ) : (
                        <div role="group" aria-label="Confirm the replay">
                          <p>
                            Replay {data.result.replayed} FAILED deliver{data.result.replayed === 1 ? 'y' : 'ies'} now? Each is sent again
                            to its endpoint.
                          </p>
                          <button type="button" class="danger" onClick={replay} disabled={busy}>
                            Confirm replay
                          </button>{' '}
                          <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                            Cancel
                          </button>
                        </div>
                      )}
                    </div>
                  )}
                </>
              )
            }
          </Show>
        </section>
      )}
      {problem && <ProblemView problem={problem} />}
      {done && (
        <section class="card" aria-labelledby="done-heading">
          <h2 id="done-heading">Replay started</h2>
          <p role="status">
            {done.replayed} deliveries handed to {done.replays.length} replay run{done.replays.length === 1 ? '' : 's'}
            {done.matched > done.replayed ? `; ${done.matched - done.replayed} more match (run it again)` : ''}.
          </p>
          {done.failed.length > 0 && (
            <div class="problem" role="alert">
              <p class="problem-title">{done.failed.length} run(s) could not be started; their deliveries stay FAILED.</p>
              <ul>
                {done.failed.map((f) => (
                  <li key={f.eventId}>
                    <a href={to.event(f.eventId)}>
                      <Code>{f.eventId}</Code>
                    </a>
                    : {f.error}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </section>
      )}
    </>
  );
}
