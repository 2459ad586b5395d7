import { AppError } from '../domain/errors.js';

/**
 * Reads environment variables into typed values, collecting every problem so a misconfigured
 * process says at once everything that is wrong, then refuses to start. A permanent error of the
 * taxonomy (invalid_config); the start-up boundary (cmd/cli.ts) prints its problems and exits 2.
 */
export class ConfigError extends AppError {
  constructor(readonly problems: string[]) {
    super('invalid_config', `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

export function createEnvReader(env: Env) {
  const problems: string[] = [];
  const raw = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };

  return {
    problems,
    str(name: string, fallback?: string): string {
      const v = raw(name) ?? fallback;
      if (v === undefined) {
        problems.push(`${name} is required`);
        return '';
      }
      return v;
    },
    optional(name: string): string | undefined {
      return raw(name);
    },
    url(name: string, fallback?: string): string {
      const v = raw(name) ?? fallback;
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
    int(name: string, fallback: number, min: number, max: number): number {
      const v = raw(name);
      if (v === undefined) return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        problems.push(`${name} must be an integer between ${min} and ${max}, got "${v}"`);
        return fallback;
      }
      return n;
    },
    num(name: string, fallback: number, min: number, max: number): number {
      const v = raw(name);
      if (v === undefined) return fallback;
      const n = Number(v);
      if (!Number.isFinite(n) || n < min || n > max) {
        problems.push(`${name} must be a number between ${min} and ${max}, got "${v}"`);
        return fallback;
      }
      return n;
    },
    bool(name: string, fallback: boolean): boolean {
      const v = raw(name);
      if (v === undefined) return fallback;
      if (/^(1|true|yes|on)$/i.test(v)) return true;
      if (/^(0|false|no|off)$/i.test(v)) return false;
      problems.push(`${name} must be true or false, got "${v}"`);
      return fallback;
    },
    oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
      const v = raw(name);
      if (v === undefined) return fallback;
      if ((values as readonly string[]).includes(v)) return v as T;
      problems.push(`${name} must be one of ${values.join(', ')}, got "${v}"`);
      return fallback;
    },
    list(name: string): string[] {
      const v = raw(name);
      return v === undefined
        ? []
        : v
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '');
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
