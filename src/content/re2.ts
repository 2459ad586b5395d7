import { RE2JS } from 're2js';

/**
 * Regular expressions in filters and transforms run on RE2 (linear time, no backtracking), as
 * CEL specifies for `matches()`: `(a+)+$` against thirty `a`s and a `!` answers in microseconds
 * where JavaScript's RegExp backtracks for minutes.
 */
export function compileRe2(pattern: string, flags = 0): RE2JS {
  return RE2JS.compile(pattern, flags);
}

/** The RE2 flags of a JavaScript regex literal's flags (JSONata's `/.../i` and `/.../m`). */
export function re2Flags(jsFlags: string): number {
  let f = 0;
  if (jsFlags.includes('i')) f |= RE2JS.CASE_INSENSITIVE;
  if (jsFlags.includes('m')) f |= RE2JS.MULTILINE;
  if (jsFlags.includes('s')) f |= RE2JS.DOTALL;
  return f;
}

interface ExecResult extends Array<string> {
  index: number;
}

/**
 * What JSONata asks of its `RegexEngine` option (`new Engine(literal)`, `lastIndex`, `exec()`),
 * on RE2. JSONata's literal arrives as a RegExp (never run: compiling one does not backtrack).
 */
export class Re2RegExp {
  lastIndex = 0;
  readonly #re: RE2JS;

  constructor(literal: RegExp | string) {
    const source = typeof literal === 'string' ? literal : literal.source;
    const flags = typeof literal === 'string' ? '' : literal.flags;
    this.#re = compileRe2(source, re2Flags(flags));
  }

  exec(input: string): ExecResult | null {
    const m = this.#re.matcher(input);
    if (this.lastIndex > input.length || !m.find(this.lastIndex)) {
      this.lastIndex = 0;
      return null;
    }
    const groups: string[] = [];
    for (let g = 0; g <= m.groupCount(); g++) groups.push(m.group(g) ?? '');
    const result = Object.assign(groups, { index: m.start() });
    // an empty match moves on by one, as RegExp does for a global regex, so a scan ends
    this.lastIndex = m.end() === m.start() ? m.end() + 1 : m.end();
    return result;
  }

  test(input: string): boolean {
    return this.exec(input) !== null;
  }
}
