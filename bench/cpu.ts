import { readdirSync, readFileSync } from 'node:fs';

// /proc reports CPU time in clock ticks; USER_HZ is 100 on Linux for every mainstream architecture
const TICKS_PER_S = 100;

interface ProcEntry {
  pid: number;
  ppid: number;
  comm: string;
  ticks: number;
}

export interface CpuSnapshot {
  /** CPU ticks of this benchmark's process tree, by component */
  groups: Map<string, number>;
  /** ticks the whole machine spent busy (every core, every process, ours or not) */
  machineBusy: number;
}

export interface CpuUsage {
  /** CPU seconds by component during the interval */
  groups: Record<string, number>;
  /** CPU seconds spent by processes outside the benchmark (other users of the machine) */
  foreignS: number;
}

function readEntry(pid: number): ProcEntry | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited meanwhile
  }
  // "pid (comm) state ppid ..." where comm may itself contain spaces or parentheses
  const close = stat.lastIndexOf(')');
  const comm = stat.slice(stat.indexOf('(') + 1, close);
  const f = stat.slice(close + 2).split(' ');
  const n = (i: number): number => Number(f[i] ?? 0);
  // utime, stime; postgres also counts its reaped backends (cutime, cstime), which come and go
  const ticks = n(11) + n(12) + (comm === 'postgres' ? n(13) + n(14) : 0);
  return { pid, ppid: n(1), comm, ticks };
}

function machineBusyTicks(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return total - (v[3] ?? 0) - (v[4] ?? 0); // minus idle and iowait
}

/**
 * CPU ticks of every process descending from this one, grouped by `name` (forked units by role,
 * postgres, temporal, this process). Read from /proc, so it costs nothing while a run is going.
 */
export function cpuSnapshot(name: (e: { pid: number; ppid: number; comm: string }) => string): CpuSnapshot {
  const entries = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readEntry(Number(d)))
    .filter((e): e is ProcEntry => e !== undefined);
  const byPid = new Map(entries.map((e) => [e.pid, e]));
  const ours = (e: ProcEntry): boolean => {
    for (let cur: ProcEntry | undefined = e; cur; cur = byPid.get(cur.ppid)) {
      if (cur.pid === process.pid) return true;
      if (cur.ppid === 0 || cur.ppid === cur.pid) return false;
    }
    return false;
  };
  const groups = new Map<string, number>();
  for (const e of entries) {
    if (!ours(e)) continue;
    const g = name(e);
    groups.set(g, (groups.get(g) ?? 0) + e.ticks);
  }
  return { groups, machineBusy: machineBusyTicks() };
}

export function cpuUsage(before: CpuSnapshot, after: CpuSnapshot): CpuUsage {
  const groups: Record<string, number> = {};
  let oursTicks = 0;
  for (const [g, t] of after.groups) {
    const d = Math.max(0, t - (before.groups.get(g) ?? 0));
    groups[g] = d / TICKS_PER_S;
    oursTicks += d;
  }
  const foreign = Math.max(0, after.machineBusy - before.machineBusy - oursTicks);
  return { groups, foreignS: foreign / TICKS_PER_S };
}
