/**
 * The Secrets and ConfigMaps a WebhookEndpoint's spec reads, by name: a change to one of them
 * reconciles the endpoint at once (operator/controller.ts), so a rotated secret, client
 * certificate or CA bundle is in the row within seconds, without waiting for the resync. Every
 * reference of the spec, whatever field holds it: `secretRef`, `previousSecretRef`,
 * `clientCertificateSecretRef`, a destination's `passwordSecretRef`, ...; `caBundleRef` by its kind.
 */
export interface EndpointRefs {
  secrets: Set<string>;
  configMaps: Set<string>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function endpointRefs(spec: unknown): EndpointRefs {
  const refs: EndpointRefs = { secrets: new Set(), configMaps: new Set() };
  const visit = (node: unknown, depth: number): void => {
    if (depth > 8) return;
    if (Array.isArray(node)) {
      for (const n of node) visit(n, depth + 1);
      return;
    }
    if (!isRecord(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (isRecord(value) && typeof value.name === 'string') {
        if (key === 'caBundleRef') (value.kind === 'ConfigMap' ? refs.configMaps : refs.secrets).add(value.name);
        else if (/secretRefs?$/i.test(key)) refs.secrets.add(value.name);
      }
      visit(value, depth + 1);
    }
  };
  visit(spec, 0);
  return refs;
}
