/** The last lines a child process printed, for the error when it dies during start. */
export interface OutputTail {
  push(chunk: string): void;
  /** the kept lines, oldest first, or "(no output)" */
  text(): string;
}

export function createOutputTail(maxLines = 20): OutputTail {
  let lines: string[] = [];
  let partial = '';
  return {
    push(chunk) {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      lines = [...lines, ...parts.filter((l) => l.trim() !== '')].slice(-maxLines);
    },
    text() {
      const all = [...lines, ...(partial.trim() === '' ? [] : [partial])].slice(-maxLines);
      return all.length === 0 ? '(no output)' : all.join('\n');
    },
  };
}

/** "exit code 3" or "killed by SIGKILL", as a child's exit event reports it. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) return `killed by ${signal}`;
  return code === null ? 'no exit status' : `exit code ${code}`;
}
