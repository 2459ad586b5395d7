import { readCidr } from './cidr.js';
import { VARIABLES, type Derived, type Mandatory } from './settings.js';

/**
 * Reads environment variables into typed values, collecting every problem so a misconfigured
 * process says at once everything that is wrong, then refuses to start. A permanent error of the
 * taxonomy (invalid_config); the start-up boundary (cmd/cli.ts) prints its problems and exits 2.
 */
// config imports nothing, so ConfigError carries the taxonomy's fields and domain/errors.ts counts it an AppError (its shape checked by the compiler there)
export class ConfigError extends Error {
  readonly kind = 'permanent';
  readonly code = 'invalid_config';
  readonly retryAfterSeconds = undefined;

  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

type Variables = typeof VARIABLES;
export type VariableName = keyof Variables;
/** The variables of a type whose default is of the given kind. */
type Named<T extends string, D> = {
  [N in VariableName]: Variables[N] extends { type: T; default: infer X } ? (X extends D ? N : never) : never;
}[VariableName];
/** A derived default is the caller's to give; any other is the table's. */
type Fallback<N extends VariableName, V> = Variables[N]['default'] extends Derived ? [fallback: V] : [];
type ValueOf<N extends VariableName> = Variables[N] extends { values: readonly (infer V)[] } ? V : never;

/** The entry of a variable, widened for the reader's own checks (the types above keep callers right). */
const entry = (name: VariableName): { default: unknown; min?: number; max?: number; values?: readonly string[] } => VARIABLES[name];

/** The default of an entry: the caller's for a derived one, else the table's (undefined: required or none). */
function defaultOf<V>(name: VariableName, fallback: readonly V[], is: (d: unknown) => d is V): V | undefined {
  if (fallback.length > 0) return fallback[0];
  const d = entry(name).default;
  return is(d) ? d : undefined;
}
const isString = (d: unknown): d is string => typeof d === 'string';
const isNumber = (d: unknown): d is number => typeof d === 'number';
const isBoolean = (d: unknown): d is boolean => typeof d === 'boolean';

/** Reads the variables of the table (settings.ts): each with its own default, bounds and values. */
export function createEnvReader(env: Env) {
  const problems: string[] = [];
  const raw = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const bounds = (name: VariableName): { min: number; max: number } => {
    const { min, max } = entry(name);
    return { min: min ?? -Infinity, max: max ?? Infinity };
  };

  const list = (name: Named<'list', readonly []>): string[] => {
    const v = raw(name);
    return v === undefined
      ? []
      : v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
  };

  return {
    problems,
    str<N extends Named<'string', string | Derived | Mandatory>>(name: N, ...fallback: Fallback<N, string>): string {
      const v = raw(name) ?? defaultOf(name, fallback, isString);
      if (v === undefined) {
        problems.push(`${name} is required`);
        return '';
      }
      return v;
    },
    /** the value as set, or undefined: for variables whose unset means something their loader says */
    optional(name: VariableName): string | undefined {
      return raw(name);
    },
    url(name: Named<'url', Mandatory>): string {
      const v = raw(name);
      if (v === undefined) {
        problems.push(`${name} is required`);
        return '';
      }
      try {
        new URL(v);
      } catch {
        problems.push(`${name} must be a URL, got "${redactUrl(v)}"`);
      }
      return v;
    },
    int<N extends Named<'integer', number | Derived>>(name: N, ...fallback: Fallback<N, number>): number {
      const d = defaultOf(name, fallback, isNumber) ?? 0;
      const v = raw(name);
      if (v === undefined) return d;
      const { min, max } = bounds(name);
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        problems.push(`${name} must be an integer between ${min} and ${max}, got "${v}"`);
        return d;
      }
      return n;
    },
    num<N extends Named<'number', number | Derived>>(name: N, ...fallback: Fallback<N, number>): number {
      const d = defaultOf(name, fallback, isNumber) ?? 0;
      const v = raw(name);
      if (v === undefined) return d;
      const { min, max } = bounds(name);
      const n = Number(v);
      if (!Number.isFinite(n) || n < min || n > max) {
        problems.push(`${name} must be a number between ${min} and ${max}, got "${v}"`);
        return d;
      }
      return n;
    },
    bool<N extends Named<'boolean', boolean | Derived>>(name: N, ...fallback: Fallback<N, boolean>): boolean {
      const d = defaultOf(name, fallback, isBoolean) ?? false;
      const v = raw(name);
      if (v === undefined) return d;
      if (/^(1|true|yes|on)$/i.test(v)) return true;
      if (/^(0|false|no|off)$/i.test(v)) return false;
      problems.push(`${name} must be true or false, got "${v}"`);
      return d;
    },
    oneOf<N extends Named<'enum', string>>(name: N): ValueOf<N> {
      const d = entry(name).default as ValueOf<N>;
      const values = entry(name).values ?? [];
      const v = raw(name);
      if (v === undefined) return d;
      if (values.includes(v)) return v as ValueOf<N>;
      problems.push(`${name} must be one of ${values.join(', ')}, got "${v}"`);
      return d;
    },
    list,
    /** a list of CIDRs or single addresses; every entry that is none is named */
    cidrs(name: Named<'list', readonly []>): string[] {
      const entries = list(name);
      for (const e of entries) {
        const cidr = readCidr(e);
        if ('problem' in cidr) problems.push(`${name}: invalid CIDR ${JSON.stringify(e)}: ${cidr.problem}`);
      }
      return entries;
    },
    done(): void {
      if (problems.length > 0) throw new ConfigError(problems);
    },
  };
}

export type EnvReader = ReturnType<typeof createEnvReader>;

/**
 * Never show credentials embedded in a URL: everything before the authority's last @ (as URL
 * parsers read it) is masked. With keepUsername, a username before a colon is kept
 * (postgres://app:***@db); a userinfo without a colon may be a token and is masked whole.
 */
export function redactUrl(v: string, keepUsername = true): string {
  return v.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/?#\\]*)@/i, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return `${scheme}${colon <= 0 || !keepUsername ? '***' : `${userinfo.slice(0, colon)}:***`}@`;
  });
}
