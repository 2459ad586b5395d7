import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiProblem } from '../api/client.js';

export type Loaded<T> = ({ status: 'loading' } | { status: 'error'; problem: ApiProblem } | { status: 'ok'; data: T }) & {
  reload(): void;
};

const asProblem = (err: unknown): ApiProblem =>
  err instanceof ApiProblem ? err : new ApiProblem(0, 'Something went wrong', err instanceof Error ? err.message : String(err), undefined);

/** Loads on mount and whenever deps change; a later load wins over an earlier one still running. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ status: 'loading' } | { status: 'error'; problem: ApiProblem } | { status: 'ok'; data: T }>({
    status: 'loading',
  });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    load().then(
      (data) => current && setState({ status: 'ok', data }),
      (err: unknown) => current && setState({ status: 'error', problem: asProblem(err) }),
    );
    return () => {
      current = false;
    };
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { ...state, reload };
}

/** Reloads every `ms` while `active` (e.g. a replayed delivery until it leaves PENDING). */
export function usePolling(reload: () => void, active: boolean, ms = 1000): void {
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(reload, ms);
    return () => clearInterval(timer);
  }, [reload, active, ms]);
}

export { asProblem };

export function ProblemView({ problem }: { problem: ApiProblem }) {
  const heading =
    problem.status === 403
      ? 'Forbidden (403): your login lacks the permission for this'
      : problem.status === 404
        ? 'Not found (404)'
        : problem.status === 0
          ? problem.title
          : `${problem.title} (${problem.status})`;
  return (
    <div class="problem" role="alert">
      <p class="problem-title">{heading}</p>
      {problem.detail && <p class="problem-detail">{problem.detail}</p>}
    </div>
  );
}

/** Renders the loaded value, a loading line, or the problem (a 403 says so, never a blank page). */
export function Show<T>({ value, children }: { value: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (value.status === 'loading')
    return (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  if (value.status === 'error') return <ProblemView problem={value.problem} />;
  return <>{children(value.data)}</>;
}
