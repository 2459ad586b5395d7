import { celEnv, celFunc, CelScalar, isCelError, parse, plan, type CelEnv, type CelInput } from '@bufbuild/cel';
import { ExprSchema, Expr_CallSchema, type Expr, type ParsedExpr } from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { compileRe2 } from './re2.js';
import type { ContentEvent } from './event-view.js';

/**
 * A WebhookEndpoint's `spec.filter`: a CEL expression over `event` that must be true for the
 * endpoint to get the event. Compiled once (when the resource is reconciled, by dev mode, by
 * `validate`), evaluated per event in prepare. Library and bounds: docs/decisions.md "Filters".
 */

/** The CRD's cap on spec.filter, and the one this module checks. */
export const FILTER_MAX_LENGTH = 4096;
/** Nodes of the parsed expression (macros expanded): bounds the work outside comprehensions. */
export const FILTER_MAX_NODES = 1000;
/**
 * The cost limit: comprehension steps (all, exists, exists_one, map, filter), nested ones
 * multiplied, per evaluation. CEL's libraries for JavaScript have no cost tracker of their own;
 * every step goes through one function this module adds to each comprehension.
 */
export const FILTER_COST_LIMIT = 10_000;
/**
 * A backstop under the cost limit for steps that each do a lot (an `in` over a long list), in CPU
 * time of this thread: evaluation is synchronous, so that is the filter's own, and a worker that
 * the machine starves does not cut a cheap filter short (wall-clock time did: the event was then
 * not routed to the endpoint). Where Node lacks threadCpuUsage (before 22.19), wall-clock time.
 */
export const FILTER_TIME_LIMIT_MS = 250;
/** Comprehension steps between two looks at the clock (a look costs about 2 µs). */
const CLOCK_EVERY_STEPS = 32;
const cpuMs: () => number =
  typeof process.threadCpuUsage === 'function'
    ? () => {
        const { user, system } = process.threadCpuUsage();
        return (user + system) / 1000;
      }
    : () => performance.now();

export const EVENT_FIELDS = ['source', 'type', 'id', 'receivedAt', 'headers', 'data'] as const;

export interface ExpressionError {
  message: string;
  /** 1-based, of the expression's text */
  line: number;
  column: number;
}

export type FilterOutcome = { matched: boolean } | { error: string };

export interface CompiledFilter {
  readonly source: string;
  evaluate(event: ContentEvent): FilterOutcome;
}

export type CompileResult<T> = { ok: true; value: T } | { ok: false; error: ExpressionError };

/** `Ready=False` and `validate` show this: "at 1:11: found . but expecting end of input". */
export const formatExpressionError = (e: ExpressionError): string => `at ${e.line}:${e.column}: ${e.message}`;

class CostExceeded extends Error {}

/** The evaluation under way (evaluation is synchronous: one at a time per thread). */
let meter: { steps: number; deadline?: number; exceeded?: string } | undefined;

const COST_STEP = '@cost_step';
const costStep = celFunc(COST_STEP, [CelScalar.BOOL], CelScalar.BOOL, (cond: boolean) => {
  if (meter !== undefined) {
    meter.steps += 1;
    if (meter.steps > FILTER_COST_LIMIT) meter.exceeded ??= `cost limit exceeded: more than ${FILTER_COST_LIMIT} comprehension steps`;
    else if (meter.steps === 1) meter.deadline = cpuMs() + FILTER_TIME_LIMIT_MS;
    else if (meter.steps % CLOCK_EVERY_STEPS === 0 && cpuMs() > (meter.deadline ?? Infinity)) {
      meter.exceeded ??= `time limit exceeded: over ${FILTER_TIME_LIMIT_MS} ms of CPU`;
    }
    // once over, every further step fails (a `||` can not swallow it: evaluate() reports it)
    if (meter.exceeded !== undefined) throw new CostExceeded(meter.exceeded);
  }
  return cond;
});

const ENV: CelEnv = celEnv({
  funcs: [costStep],
  // the same RE2 as transforms (its bundled one is RE2 too); a pattern compiled once per text
  re2: { compile: (pattern: string) => compileRe2(pattern) },
});

/** CEL's type identifiers, for `type(x) == map` */
const TYPE_NAMES = ['bool', 'int', 'uint', 'double', 'string', 'bytes', 'list', 'map', 'null_type', 'type'];

/** Calls the planner evaluates itself, not through the function table. */
const BUILT_IN_CALLS = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '@not_strictly_false', COST_STEP]);

const positionOf = (text: string, offset: number): { line: number; column: number } => {
  const before = text.slice(0, Math.max(0, offset));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 };
};

interface Walk {
  text: string;
  positions: Record<string, number>;
  nodes: number;
  nextId: bigint;
}

function problemAt(w: Walk, e: Expr, message: string): ExpressionError {
  return { message, ...positionOf(w.text, w.positions[String(e.id)] ?? 0) };
}

function describeCall(name: string): string {
  const op = /^_(.+)_$/.exec(name)?.[1] ?? /^(.+)_$/.exec(name)?.[1];
  return op !== undefined ? `operator ${op}` : `function ${name}()`;
}

/**
 * What the planner would only find out at evaluation: unknown variables, fields of `event`,
 * functions, arities, and constant patterns RE2 does not take. Also counts nodes and puts the
 * cost step into each comprehension. Returns the first problem.
 */
function check(w: Walk, e: Expr, scope: ReadonlySet<string>): ExpressionError | undefined {
  w.nodes += 1;
  if (w.nodes > FILTER_MAX_NODES) return problemAt(w, e, `expression too large: over ${FILTER_MAX_NODES} nodes`);
  const k = e.exprKind;
  switch (k.case) {
    case 'constExpr':
      return undefined;
    case 'identExpr':
      return scope.has(k.value.name) ? undefined : problemAt(w, e, `undeclared reference to '${k.value.name}' (the variable is event)`);
    case 'selectExpr': {
      const operand = k.value.operand;
      if (operand?.exprKind.case === 'identExpr' && operand.exprKind.value.name === 'event' && !scope.has('@shadowed:event')) {
        if (!(EVENT_FIELDS as readonly string[]).includes(k.value.field)) {
          return problemAt(w, e, `event has no field '${k.value.field}' (it has ${EVENT_FIELDS.join(', ')})`);
        }
      }
      return operand ? check(w, operand, scope) : undefined;
    }
    case 'callExpr': {
      const { function: name, target, args } = k.value;
      if (!BUILT_IN_CALLS.has(name)) {
        const group = ENV.funcs.find(name);
        const fits =
          group !== undefined &&
          [...group].some((f) => (f.target !== undefined) === (target !== undefined) && f.arguments.length === args.length);
        if (!fits) {
          const known = group !== undefined;
          return problemAt(
            w,
            e,
            known
              ? `${describeCall(name)} does not take ${args.length} argument(s) ${target ? 'on a receiver' : ''}`.trim()
              : `unknown ${describeCall(name)}`,
          );
        }
      }
      if (name === 'matches') {
        const pattern = args[0]?.exprKind;
        if (pattern?.case === 'constExpr' && pattern.value.constantKind.case === 'stringValue') {
          try {
            compileRe2(pattern.value.constantKind.value);
          } catch (err) {
            return problemAt(w, args[0] as Expr, `invalid RE2 pattern: ${(err as Error).message}`);
          }
        }
      }
      for (const sub of target ? [target, ...args] : args) {
        const p = check(w, sub, scope);
        if (p) return p;
      }
      return undefined;
    }
    case 'listExpr':
      for (const el of k.value.elements) {
        const p = check(w, el, scope);
        if (p) return p;
      }
      return undefined;
    case 'structExpr':
      for (const entry of k.value.entries) {
        if (entry.keyKind.case === 'fieldKey') return problemAt(w, e, 'message literals are not supported: event is the only input');
        for (const sub of [entry.keyKind.value, entry.value]) {
          const p = sub ? check(w, sub, scope) : undefined;
          if (p) return p;
        }
      }
      if (k.value.messageName !== '') return problemAt(w, e, 'message literals are not supported: event is the only input');
      return undefined;
    case 'comprehensionExpr': {
      const c = k.value;
      for (const sub of [c.iterRange, c.accuInit]) {
        const p = sub ? check(w, sub, scope) : undefined;
        if (p) return p;
      }
      const inner = new Set(scope);
      for (const v of [c.iterVar, c.iterVar2, c.accuVar]) {
        if (v === '') continue;
        inner.add(v);
        if (v === 'event') inner.add('@shadowed:event');
      }
      for (const sub of [c.loopCondition, c.loopStep, c.result]) {
        const p = sub ? check(w, sub, inner) : undefined;
        if (p) return p;
      }
      // every step of the loop passes through the cost meter
      const cond = c.loopCondition;
      if (cond) {
        c.loopCondition = create(ExprSchema, {
          id: w.nextId++,
          exprKind: { case: 'callExpr', value: create(Expr_CallSchema, { function: COST_STEP, args: [cond] }) },
        });
      }
      return undefined;
    }
    default:
      return problemAt(w, e, 'an expression the parser did not finish');
  }
}

function maxId(e: ParsedExpr): bigint {
  let max = 0n;
  for (const id of Object.keys(e.sourceInfo?.positions ?? {})) if (BigInt(id) > max) max = BigInt(id);
  return max;
}

interface PegLocation {
  start?: { line: number; column: number };
}

function syntaxError(err: unknown): ExpressionError {
  const cause = (err as { cause?: { location?: PegLocation; message?: string } }).cause;
  const at = cause?.location?.start;
  const raw = err instanceof Error ? err.message : String(err);
  // "<input>:1:11: found . but expecting end of input"
  const m = /^(?:syntax error: )?<input>:(\d+):(\d+): (.*)$/s.exec(raw);
  if (m) return { line: Number(m[1]), column: Number(m[2]), message: `syntax error: ${m[3]}` };
  return { line: at?.line ?? 1, column: at?.column ?? 1, message: `syntax error: ${raw}` };
}

/** A compiled CEL expression: its value for an event, or why there is none. */
export type CelEvaluation = { value: unknown } | { error: string };

/**
 * Compiles CEL as filters take it (checks, bounds, the cost meter) whatever the result's type:
 * compileFilter wants a bool, an ordering key a string; the conformance tests compare any value.
 * `noun` names the expression in the words of a problem ("empty key", "filter too long").
 */
export function compileCel(text: string, noun = 'filter'): CompileResult<(event: ContentEvent | undefined) => CelEvaluation> {
  if (text.length > FILTER_MAX_LENGTH) {
    return {
      ok: false,
      error: {
        line: 1,
        column: FILTER_MAX_LENGTH + 1,
        message: `${noun} too long: ${text.length} characters, at most ${FILTER_MAX_LENGTH}`,
      },
    };
  }
  if (text.trim() === '') return { ok: false, error: { line: 1, column: 1, message: `empty ${noun}` } };
  let parsed: ParsedExpr & { expr: Expr };
  try {
    parsed = parse(text);
  } catch (err) {
    return { ok: false, error: syntaxError(err) };
  }
  const walk: Walk = {
    text,
    positions: Object.fromEntries(Object.entries(parsed.sourceInfo?.positions ?? {})),
    nodes: 0,
    nextId: maxId(parsed) + 1n,
  };
  const problem = check(walk, parsed.expr, new Set(['event', ...TYPE_NAMES]));
  if (problem) return { ok: false, error: problem };
  const run = plan(ENV, parsed);
  return {
    ok: true,
    value: (event) => {
      meter = { steps: 0 };
      try {
        const result = run(event === undefined ? {} : { event: celInput(event) });
        if (meter.exceeded !== undefined) return { error: meter.exceeded };
        if (isCelError(result)) return { error: errorText(result) };
        return { value: result };
      } catch (err) {
        return { error: errorText(err) };
      } finally {
        meter = undefined;
      }
    },
  };
}

/**
 * A CEL expression whose value must be of one kind (a filter's bool, an ordering key's string,
 * content/ordering-key.ts): compiled with compileCel's checks and bounds, each evaluation's value
 * handed to `accept`, which turns it into the outcome or says why it is not one.
 */
export function compileCelAs<T>(
  text: string,
  noun: string,
  accept: (value: unknown) => T | { error: string },
): CompileResult<(event: ContentEvent) => T | { error: string }> {
  const compiled = compileCel(text, noun);
  if (!compiled.ok) return compiled;
  const evaluate = compiled.value;
  return {
    ok: true,
    value: (event) => {
      const out = evaluate(event);
      return 'error' in out ? out : accept(out.value);
    },
  };
}

const filterOutcome = (result: unknown): FilterOutcome =>
  typeof result === 'boolean'
    ? { matched: result }
    : { error: `the filter gave ${typeof result === 'bigint' ? 'an int' : typeof result}, not a bool` };

export function compileFilter(text: string): CompileResult<CompiledFilter> {
  const compiled = compileCelAs(text, 'filter', filterOutcome);
  return compiled.ok ? { ok: true, value: { source: text, evaluate: compiled.value } } : compiled;
}

function errorText(err: unknown): string {
  // the cost meter's exception arrives wrapped in a CelError as its cause
  let e: unknown = err;
  for (let i = 0; i < 5 && e instanceof Error; i++) {
    if (e instanceof CostExceeded) return e.message;
    e = e.cause;
  }
  return err instanceof Error ? err.message : String(err);
}

const celInput = (e: ContentEvent): CelInput => ({
  source: e.source,
  type: e.type,
  id: e.id,
  receivedAt: timestampFromDate(e.receivedAt),
  headers: e.headers,
  data: jsonForCel(e.data),
});

/** Parsed JSON is already what CEL takes (a JSON number a double, as CEL's JSON mapping says). */
const jsonForCel = (v: unknown): CelInput => (v === undefined ? null : (v as CelInput));
