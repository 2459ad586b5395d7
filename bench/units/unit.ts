import type { LoadOptions, LoadResult } from '../protocol.js';

/** One startable piece of the benchmark, hosted alone in its own process (bench/child.ts). */
export interface Unit {
  /** the HTTP port it listens on, if any */
  port: number | null;
  /** only the load generator answers this */
  load?(options: LoadOptions): Promise<LoadResult>;
  stop(): Promise<void>;
}
