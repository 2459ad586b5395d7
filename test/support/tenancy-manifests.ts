/**
 * The manifests of the tenancy tests (docs/tenancy.md), one set for the operator on kube-apiserver
 * (test/operator/tenancy.test.ts) and dev mode (test/dev/tenancy.test.ts): a source owned by an
 * InboundCredential in namespace `pay`, and an endpoint of it in each of three namespaces: the
 * credential's own, `orders` (which a selector may pick by its label) and `intruder`.
 */
export interface TenancyNames {
  /** the credential's namespace */
  pay: string;
  orders: string;
  intruder: string;
  source: string;
  /** the receiver's origin; each endpoint delivers to a path of its own: /own, /orders, /intruder */
  receiver: string;
}

export type Allowed = 'default' | 'Same' | 'All' | 'Selector';

/** The label a Selector credential selects namespaces by. */
export const READER_LABEL = 'webhooks.example.com/reader';

const allowedEndpoints = (allowed: Allowed): string => {
  if (allowed === 'default') return '';
  if (allowed !== 'Selector') return `  allowedEndpoints:\n    namespaces: {from: ${allowed}}\n`;
  return `  allowedEndpoints:\n    namespaces:\n      from: Selector\n      selector:\n        matchLabels: {${READER_LABEL}: "true"}\n`;
};

export const namespacesYaml = (n: TenancyNames, ordersReader: boolean): string =>
  [n.pay, n.orders, n.intruder]
    .map(
      (ns) =>
        `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${ns}\n` +
        (ns === n.orders && ordersReader ? `  labels: {${READER_LABEL}: "true"}\n` : ''),
    )
    .join('---\n');

export const credentialYaml = (n: TenancyNames, allowed: Allowed): string => `apiVersion: v1
kind: Secret
metadata: {name: pay-inbound, namespace: ${n.pay}}
stringData: {password: pay-password}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: pay, namespace: ${n.pay}}
spec:
  source: ${n.source}
  username: pay-sender
  passwordSecretRef: {name: pay-inbound, key: password}
${allowedEndpoints(allowed)}`;

/** An endpoint per namespace, named for where it is. */
export const ENDPOINTS = ['own', 'orders', 'intruder'] as const;
export type EndpointName = (typeof ENDPOINTS)[number];

export const endpointNamespace = (n: TenancyNames, e: EndpointName): string =>
  e === 'own' ? n.pay : e === 'orders' ? n.orders : n.intruder;

export const endpointsYaml = (n: TenancyNames, opts: { maxAttempts?: number } = {}): string =>
  ENDPOINTS.map(
    (e) => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ${e}, namespace: ${endpointNamespace(n, e)}}
spec:
  source: ${n.source}
  url: ${n.receiver}/${e}
  maxAttempts: ${opts.maxAttempts ?? 3}
`,
  ).join('---\n');

/** The whole folder as dev mode reads it. */
export const tenancyManifests = (
  n: TenancyNames,
  opts: { allowed: Allowed; ordersReader: boolean; credential?: boolean; maxAttempts?: number },
): string =>
  [
    namespacesYaml(n, opts.ordersReader),
    ...(opts.credential === false ? [] : [credentialYaml(n, opts.allowed)]),
    endpointsYaml(n, opts),
  ].join('---\n');
