import { describe, expect, it } from 'vitest';
import { loadOperatorConfig } from '../../../src/config/config.js';
import { loadDevConfig } from '../../../src/dev/dev-config.js';
import { ConfigError } from '../../../src/config/env-reader.js';

// TENANCY_DEFAULT_ALLOWED_NAMESPACES (docs/tenancy.md): what an InboundCredential without
// spec.allowedEndpoints allows, read alike by the operator and dev mode.
const loaders = {
  operator: (env: Record<string, string>) => loadOperatorConfig({ DATABASE_URL: 'postgres://u:p@db:5432/webhooks', ...env }),
  dev: (env: Record<string, string>) => loadDevConfig(env),
};

describe.each(Object.entries(loaders))('TENANCY_DEFAULT_ALLOWED_NAMESPACES of %s', (_name, load) => {
  it.each([
    [{}, 'Same'],
    [{ TENANCY_DEFAULT_ALLOWED_NAMESPACES: 'Same' }, 'Same'],
    [{ TENANCY_DEFAULT_ALLOWED_NAMESPACES: 'All' }, 'All'],
  ])('%j -> %s', (env, expected) => {
    expect(load(env).defaultAllowedNamespaces).toBe(expected);
  });

  it('names a value it does not know', () => {
    const err = (() => {
      try {
        load({ TENANCY_DEFAULT_ALLOWED_NAMESPACES: 'Selector' });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual(['TENANCY_DEFAULT_ALLOWED_NAMESPACES must be one of Same, All, got "Selector"']);
  });
});
