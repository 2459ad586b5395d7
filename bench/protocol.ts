// Messages between bench/run.ts and the helper processes it forks (bench/child.ts), over Node's
// IPC channel. The service's own processes are not forked this way: they run as the compiled CLI
// (bench/cli-unit.ts).

export type UnitRole = 'baseline' | 'bare-worker' | 'load';

/** What a unit needs to reach the shared dependencies; each role reads the fields it uses. */
export interface UnitConfig {
  databaseUrl: string;
  temporalAddress: string;
  dbPoolMax: number;
  maxConcurrentActivities: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  durationS: number;
  /** Basic credentials sent with every request (the baseline ignores them) */
  authorization: string;
  /** unique: a fresh external event id per request; duplicate: the same id every time */
  ids: 'unique' | 'duplicate';
  idPrefix: string;
}

export interface LoadResult {
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationS: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

export interface UnitStats {
  peakRssMb: number;
  rssMb: number;
}

export type ToChild =
  | { type: 'start'; role: UnitRole; config: UnitConfig }
  | { type: 'load'; id: number; options: LoadOptions }
  | { type: 'stats'; id: number }
  | { type: 'reset-peak' }
  | { type: 'stop' };

export type FromChild =
  | { type: 'ready'; port: number | null }
  | { type: 'load-result'; id: number; result: LoadResult }
  | { type: 'stats'; id: number; stats: UnitStats }
  | { type: 'failed'; message: string };
