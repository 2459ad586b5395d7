// `npm run bench:image`: the built image's size per layer (budget: the layers above the base at
// most 200 MB), and the worker's start time and memory with the prebuilt workflow bundle against
// bundling the workflow code at start-up (what the worker did before). See docs/benchmarks.md.
//
//   IMAGE=webhook-fanout:dev ROUNDS=3 npm run bench:image     # needs the image and `npm run build`
//   ROUNDS=0 npm run bench:image                              # layer sizes only
//
// Worker start: from spawning the process to its "worker: started" log line (connected to
// Temporal, polling), then RSS (VmRSS) and peak RSS (VmHWM) from /proc two seconds later. Both
// variants run the same compiled dist/ on this host with the same Node; "source" is a copy of
// dist/ without workflow-bundle.js, so the worker falls back to webpack over dist/workflows/.
// The image's worker is timed too (container start included), its RSS from /metrics.
import { execFile, spawn } from 'node:child_process';
import { cp, mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { freePort } from '../src/dev/ports.js';
import { startTemporalDevServer } from '../src/dev/temporal-dev-server.js';
import { CHART_FLAGS, ENGINE, IMAGE } from '../test/image/support/container.js';

const exec = promisify(execFile);
const REPO = fileURLToPath(new URL('../', import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BUDGET_MB = 200;
// image sizes in MB (10^6 bytes, as podman and docker print them); memory in MiB (/proc's kB)
const MB = 1_000_000;
const MIB = 1024 * 1024;

interface HistoryEntry {
  id: string;
  size: number;
  createdBy: string;
}

async function history(image: string): Promise<HistoryEntry[]> {
  if (ENGINE === 'podman') {
    // podman's --human=false leaves {{.Size}} human-readable; its JSON has bytes
    const { stdout } = await exec(ENGINE, ['history', '--format', 'json', image]);
    return (JSON.parse(stdout) as { id: string; size: number; CreatedBy: string }[]).map((e) => ({
      id: e.id,
      size: e.size,
      createdBy: e.CreatedBy,
    }));
  }
  const { stdout } = await exec(ENGINE, [
    'history',
    '--no-trunc',
    '--human=false',
    '--format',
    '{{.ID}}\t{{.Size}}\t{{.CreatedBy}}',
    image,
  ]);
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', size = '0', createdBy = ''] = line.split('\t');
      return { id, size: Number.parseInt(size, 10) || 0, createdBy };
    });
}

async function layerReport(): Promise<{ lines: string[]; aboveBaseMb: number; baseMb: number }> {
  const [image, base] = await Promise.all([history(IMAGE), history('docker.io/library/node:24-bookworm-slim')]);
  // history is newest first; the base's entries are the image's oldest ones
  const own = image.slice(0, image.length - base.length).filter((e) => e.size > 0);
  const baseBytes = base.reduce((s, e) => s + e.size, 0);
  const aboveBase = own.reduce((s, e) => s + e.size, 0);
  const lines = own.reverse().map(
    (e) =>
      `  ${(e.size / MB).toFixed(1).padStart(7)} MB  ${e.createdBy
        .replace(/^\/bin\/sh -c (#\(nop\) )?/, '')
        .replace(/\s+/g, ' ')
        .slice(0, 100)}`,
  );
  return { lines, aboveBaseMb: aboveBase / MB, baseMb: baseBytes / MB };
}

interface StartFigures {
  startMs: number;
  rssMb: number;
  peakRssMb: number;
}

async function procMb(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return kb / 1024;
}

function waitForLine(child: ReturnType<typeof spawn>, needle: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no "${needle}" within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes(needle)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited ${String(code)} before "${needle}":\n${out}`)));
  });
}

async function stopChild(child: ReturnType<typeof spawn>): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function hostWorker(distDir: string, env: Record<string, string>): Promise<StartFigures> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(distDir, 'cmd/cli.js'), 'worker'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await waitForLine(child, 'worker: started', 120_000);
    const startMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 2000));
    return { startMs, rssMb: await procMb(child.pid!, 'VmRSS'), peakRssMb: await procMb(child.pid!, 'VmHWM') };
  } finally {
    await stopChild(child);
  }
}

async function containerWorker(env: Record<string, string>): Promise<StartFigures> {
  const name = `wf-bench-worker-${process.pid}`;
  // as the chart runs it (the image tests' flags)
  const flags = ['--rm', '--name', name, ...CHART_FLAGS];
  const t0 = performance.now();
  const child = spawn(ENGINE, ['run', ...flags, ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]), IMAGE, 'worker'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await waitForLine(child, 'worker: started', 120_000);
    const startMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 2000));
    const metrics = await (await fetch(`http://127.0.0.1:${env.MANAGEMENT_PORT}/metrics`)).text();
    const rss = Number(/^(?:webhook_fanout_)?process_resident_memory_bytes (\S+)/m.exec(metrics)?.[1] ?? 0) / MIB;
    return { startMs, rssMb: rss, peakRssMb: Number.NaN };
  } finally {
    await exec(ENGINE, ['kill', '--signal', 'TERM', name]).catch(() => undefined);
    await new Promise((r) => child.once('exit', r));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fmt = (label: string, runs: StartFigures[]) =>
  `  ${label.padEnd(34)} start ${median(runs.map((r) => r.startMs))
    .toFixed(0)
    .padStart(5)} ms   RSS ${median(runs.map((r) => r.rssMb))
    .toFixed(0)
    .padStart(4)} MiB   peak RSS ${
    Number.isNaN(runs[0]?.peakRssMb ?? Number.NaN)
      ? '   -'
      : median(runs.map((r) => r.peakRssMb))
          .toFixed(0)
          .padStart(4)
  } MiB   (median of ${runs.length}: ${runs.map((r) => r.startMs.toFixed(0)).join(', ')} ms)`;

async function main(): Promise<void> {
  const layers = await layerReport();
  console.log(`image ${IMAGE}: layers above the base (${layers.baseMb.toFixed(0)} MB), oldest first`);
  for (const l of layers.lines) console.log(l);
  console.log(
    `  total above the base: ${layers.aboveBaseMb.toFixed(1)} MB (budget ${BUDGET_MB} MB: ${layers.aboveBaseMb <= BUDGET_MB ? 'within' : 'OVER'})`,
  );

  if (ROUNDS < 1) return;
  const dist = path.join(REPO, 'dist');
  const sourceDist = path.join(REPO, '.data/bench-image/dist');
  await rm(sourceDist, { recursive: true, force: true });
  await mkdir(path.dirname(sourceDist), { recursive: true });
  await cp(dist, sourceDist, { recursive: true });
  await rm(path.join(sourceDist, 'workflow-bundle.js'));
  await rm(path.join(sourceDist, 'workflow-bundle-traced.js'), { force: true });

  const [pg, temporal] = await Promise.all([startEmbeddedPostgres(), startTemporalDevServer()]);
  try {
    const env = async (): Promise<Record<string, string>> => ({
      DATABASE_URL: pg.url,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: 'bench-image',
      MANAGEMENT_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
    });
    const bundled: StartFigures[] = [];
    const source: StartFigures[] = [];
    const image: StartFigures[] = [];
    // alternate, so drift of the machine's load hits both alike
    for (let i = 0; i < ROUNDS; i++) {
      source.push(await hostWorker(sourceDist, await env()));
      bundled.push(await hostWorker(dist, await env()));
      image.push(await containerWorker(await env()));
    }
    console.log(`worker start (Node ${process.version}, ${ROUNDS} rounds):`);
    console.log(fmt('before: bundling at start (webpack)', source));
    console.log(fmt('after: prebuilt workflow-bundle.js', bundled));
    console.log(fmt('image (container start included)', image));
  } finally {
    await Promise.allSettled([temporal.stop(), pg.stop(), rm(sourceDist, { recursive: true, force: true })]);
  }
}

await main();
