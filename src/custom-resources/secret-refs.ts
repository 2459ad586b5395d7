/**
 * The names of the Secrets a resource's spec reads, wherever the spec names them: every
 * `secretRef`, every `...SecretRef` (auth, auth.oauth2's client secret or key, signing and its
 * previous key, spec.tls's client certificate, a destination's credentials) and a `caBundleRef`
 * of kind Secret. The operator reconciles a resource when one of them changes, so a rotated
 * Secret reaches the row within seconds, not at the next resync. A walk rather than a list: a new
 * field named by the convention (docs/operator.md, "a reference to a Secret is ...SecretRef") is
 * followed without touching this.
 */
export function secretNamesOf(spec: unknown): Set<string> {
  const names = new Set<string>();
  const visit = (node: unknown, depth: number): void => {
    if (typeof node !== 'object' || node === null || depth > 8) return;
    if (Array.isArray(node)) {
      for (const item of node) visit(item, depth + 1);
      return;
    }
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (isSecretRef(key, value)) names.add(value.name);
      visit(value, depth + 1);
    }
  };
  visit(spec, 0);
  return names;
}

function isSecretRef(key: string, value: unknown): value is { name: string } {
  if (typeof value !== 'object' || value === null || typeof (value as { name?: unknown }).name !== 'string') return false;
  if (key === 'secretRef' || key.endsWith('SecretRef')) return true;
  // a CA bundle may come from a Secret or, where a field allows it, a ConfigMap
  return key === 'caBundleRef' && ((value as { kind?: unknown }).kind ?? 'Secret') === 'Secret';
}

/**
 * The names of the ConfigMaps a resource's spec reads: a `caBundleRef` of kind ConfigMap (a CA
 * bundle is not a secret; trust-manager distributes them as ConfigMaps). The operator reconciles
 * the resource when one of them changes, as for its Secrets.
 */
export function configMapNamesOf(spec: unknown): Set<string> {
  const names = new Set<string>();
  const visit = (node: unknown, depth: number): void => {
    if (typeof node !== 'object' || node === null || depth > 8) return;
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      const ref = value as { kind?: unknown; name?: unknown } | null;
      if (key === 'caBundleRef' && typeof ref === 'object' && ref !== null && ref.kind === 'ConfigMap' && typeof ref.name === 'string')
        names.add(ref.name);
      visit(value, depth + 1);
    }
  };
  visit(spec, 0);
  return names;
}
