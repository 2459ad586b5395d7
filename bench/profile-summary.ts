// `npx tsx bench/profile-summary.ts .data/bench/ingest.cpuprofile [top] [--runs sqs]`: where a
// unit's CPU went, from a V8 profile written with BENCH_PROFILE=<role>. Time inside Node itself
// (socket writes, crypto, streams) is charged to the package that called into Node, so "who caused
// it" shows. Module loading (start-up) is left out. `--runs <kind>` keeps only the samples taken
// while that kind of e2e run was measured (http, sqs, kafka, bare1, ...: the windows `npm run
// bench` writes to e2e-windows.json beside the profile), to set one destination's rounds beside another's.
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  /** microseconds on the monotonic clock: the bench's windows are on the same */
  startTime: number;
}

/** node_modules/<pkg> (scoped too), src/<dir>, bench, or undefined for Node and V8 internals. */
function packageOf(url: string): string | undefined {
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm?.[1]) return nm[1];
  const own = /\/(src\/[^/]+|bench)\//.exec(url);
  return own?.[1];
}

function top(map: Map<string, number>, total: number, n: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
}

const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? args.splice(runsAt, 2)[1] : undefined;
const file = args[0];
if (file === undefined || (runsAt >= 0 && runs === undefined)) {
  throw new Error('usage: profile-summary.ts <file.cpuprofile> [top] [--runs <kind>]');
}
const n = Number(args[1] ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

/** The measured windows of one kind of e2e run, from e2e-windows.json beside the profile. */
function windowsOf(kind: string): Array<[number, number]> {
  const all = JSON.parse(readFileSync(path.join(path.dirname(file ?? ''), 'e2e-windows.json'), 'utf8')) as Record<
    string,
    Array<[number, number]>
  >;
  const w = all[kind];
  if (!w) throw new Error(`no runs named ${kind} in e2e-windows.json (there are: ${Object.keys(all).join(', ')})`);
  return w;
}
const windows = runs === undefined ? undefined : windowsOf(runs);
// a sample's time: the profile's start plus the deltas up to it
const kept: boolean[] = [];
let at = profile.startTime;
for (const d of profile.timeDeltas) {
  at += d;
  kept.push(windows === undefined || windows.some(([from, to]) => at >= from && at <= to));
}
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id);

const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  if (kept[i]) selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const byOwner = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
let idle = 0;
let startup = 0;
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  if (functionName === '(idle)') {
    idle += us;
    continue;
  }
  // walk up: the first frame of a package owns the time; module loading anywhere = start-up
  let owner: string | undefined;
  let loading = false;
  for (let cur: ProfileNode | undefined = node; cur; cur = byId.get(parent.get(cur.id) ?? -1)) {
    const u = cur.callFrame.url;
    if (u.includes('node:internal/modules') || u.includes('/tsx/')) loading = true;
    owner ??= packageOf(u);
  }
  if (loading) {
    startup += us;
    continue;
  }
  total += us;
  const ownerKey = owner ?? `(${functionName || 'native'})`;
  byOwner.set(ownerKey, (byOwner.get(ownerKey) ?? 0) + us);
  const where =
    url === '' ? '' : ` ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')}:${lineNumber + 1}`;
  const key = `${functionName || '(anonymous)'}${where}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
}

if (windows) {
  const wallMs = windows.reduce((a, [from, to]) => a + (to - from), 0) / 1000;
  process.stdout.write(`only the ${windows.length} measured windows of ${runs ?? ''} (${wallMs.toFixed(0)} ms of wall time)\n`);
}
process.stdout.write(
  `busy ${(total / 1000).toFixed(0)} ms (plus ${(startup / 1000).toFixed(0)} ms start-up), idle ${(idle / 1000).toFixed(0)} ms\n\n`,
);
process.stdout.write('self time, charged to the calling package:\n' + top(byOwner, total, n).join('\n') + '\n\n');
process.stdout.write('self time by function:\n' + top(byFunction, total, n).join('\n') + '\n');
