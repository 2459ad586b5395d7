import { ConfigError } from '../../src/config/env-reader.js';

/** The problems a configuration loader names (ConfigError), or [] when it loads. */
export function problemsOf(load: () => unknown): string[] {
  try {
    load();
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}
