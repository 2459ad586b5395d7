/** A started part of a process (a server, a consumer, a worker): stopped in reverse order at shutdown (processes/lifecycle.ts). */
export interface RunningProcess {
  stop(): Promise<void>;
}
