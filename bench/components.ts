/** What the bench knows of its process tree: roles by pid (our processes, the Temporal server), Temporal's postmaster. */
export interface KnownProcesses {
  roles: Map<number, string>;
  /** the postmaster of Temporal's own Postgres (BENCH_TEMPORAL=postgres) */
  temporalPostgresPid: number | undefined;
}

/**
 * The CPU group of a process of the bench's tree (for cpuSnapshot): this process is `bench`, a
 * process with a role is that role, Temporal's own Postgres cluster is `temporal-postgres` (its
 * postmaster and every backend, the postmaster's children), the service's cluster `postgres`.
 */
export function componentOf(known: KnownProcesses): (e: { pid: number; ppid: number; comm: string }) => string {
  return ({ pid, ppid, comm }) => {
    if (pid === process.pid) return 'bench';
    const role = known.roles.get(pid);
    if (role !== undefined) return role;
    const pg = known.temporalPostgresPid;
    if (comm === 'postgres') return pg !== undefined && (pid === pg || ppid === pg) ? 'temporal-postgres' : 'postgres';
    return comm === 'temporal' ? comm : `other:${comm}`;
  };
}
