// The folders of src/ as a graph of who imports whom, and the loops in it (scripts/lint/folder-cycles.ts
// runs it in `npm run lint`). A folder is a room of docs/architecture.md: src/<folder>/, its
// subfolders included. Import cycles between files are eslint's (import-x/no-cycle); this finds
// the ones between folders, which no file-level rule sees (a/x.ts imports b/y.ts, b/z.ts imports
// a/w.ts: no file cycle, yet neither folder stands without the other).
import path from 'node:path';
import ts from 'typescript';

/** One import of one file: both paths relative to the repository, with forward slashes. */
export interface FileImport {
  from: string;
  to: string;
}

/**
 * The relative module specifiers a TypeScript file imports: `import`, `import type`, `export ...
 * from` and `import()` alike (a cycle through types is a cycle in the design too).
 */
export function relativeImportsOf(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.map((f) => f.fileName).filter((name) => name.startsWith('./') || name.startsWith('../'));
}

/**
 * The file a relative specifier names, among the files given (NodeNext ESM: `./x.js` is `x.ts` or
 * `x.tsx` in the source); undefined for anything else (a JSON file, a file outside the set).
 */
export function resolveImport(fromFile: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), specifier));
  const stem = target.replace(/\.(m?js|jsx)$/, '');
  return [target, `${stem}.ts`, `${stem}.tsx`, `${stem}.d.ts`, `${target}/index.ts`].find((candidate) => files.has(candidate));
}

/** The folder of src/ a file is in (`src/api/auth/x.ts` -> `api`); undefined outside a folder of src/. */
export function folderOf(file: string): string | undefined {
  const m = /^src\/([^/]+)\/./.exec(file);
  return m?.[1];
}

/** Folder -> the folders it imports, each with the first file import (in sorted order) that makes the edge. */
export type FolderGraph = Map<string, Map<string, FileImport>>;

export function folderGraph(imports: readonly FileImport[]): FolderGraph {
  const graph: FolderGraph = new Map();
  const sorted = [...imports].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
  for (const imp of sorted) {
    const from = folderOf(imp.from);
    const to = folderOf(imp.to);
    if (from === undefined || to === undefined || from === to) continue;
    const edges = graph.get(from) ?? new Map<string, FileImport>();
    if (!edges.has(to)) edges.set(to, imp);
    graph.set(from, edges);
  }
  return graph;
}

/** The strongly connected components of more than one folder (Tarjan), each sorted, in sorted order. */
function tangles(graph: FolderGraph): string[][] {
  const nodes = [...new Set([...graph.keys(), ...[...graph.values()].flatMap((e) => [...e.keys()])])].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of [...(graph.get(v)?.keys() ?? [])].sort()) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/** A shortest loop from start back to start through the given folders (breadth first). */
function shortestLoop(graph: FolderGraph, start: string, within: ReadonlySet<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const w of [...(graph.get(v)?.keys() ?? [])].sort()) {
      if (!within.has(w)) continue;
      if (w === start) {
        const loop = [v];
        while (loop[0] !== start) loop.unshift(cameFrom.get(loop[0] as string) as string);
        return [...loop, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

/** A folder loop: the folders in order (the first again at the end) and the file import behind each step. */
export interface FolderLoop {
  folders: string[];
  steps: FileImport[];
}

/** One loop for each knot of folders that import each other (fixing it may reveal another in the same knot). */
export function folderLoops(graph: FolderGraph): FolderLoop[] {
  return tangles(graph).map((component) => {
    const folders = shortestLoop(graph, component[0] as string, new Set(component));
    const steps = folders.slice(1).map((to, i) => graph.get(folders[i] as string)?.get(to) as FileImport);
    return { folders, steps };
  });
}

export function describeLoop(loop: FolderLoop): string {
  return [`folder import loop: ${loop.folders.join(' -> ')}`, ...loop.steps.map((s) => `  ${s.from} imports ${s.to}`)].join('\n');
}
