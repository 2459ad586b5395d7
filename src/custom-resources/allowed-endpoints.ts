import type { DefaultAllowedNamespaces } from '../config/settings.js';
import type { AllowedEndpoints, DeniedReason, InboundCredential, LabelSelector } from '../domain/records.js';

/**
 * Which endpoints may subscribe to a source (docs/tenancy.md): the rule of the operator and of dev
 * mode, in one place, so both decide alike and say it in the same words. The source's owner is the
 * credential row in effect for it (the one ingest verifies with: the earliest Ready
 * InboundCredential's, or the last good configuration of a credential that turned not Ready),
 * and its spec.allowedEndpoints.namespaces says, as a Gateway listener's allowedRoutes does, which
 * namespaces' endpoints it allows: Same (the default), All, or a Selector over Namespace labels.
 */

/** The label Kubernetes sets on every Namespace (its name), which dev mode adds as the API server does. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** The labels of a namespace the caller knows nothing about: its name only, as the API server sets it. */
export const defaultNamespaceLabels = (namespace: string): Record<string, string> => ({ [NAMESPACE_NAME_LABEL]: namespace });

/** metav1.LabelSelector's meaning: every matchLabels pair and every expression hold; an empty selector matches everything. */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const has = (k: string) => Object.prototype.hasOwnProperty.call(labels, k);
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(k) || labels[k] !== v) return false;
  }
  for (const e of selector.matchExpressions ?? []) {
    const present = has(e.key);
    const value = present ? labels[e.key] : undefined;
    const values = e.values ?? [];
    const holds =
      e.operator === 'In'
        ? present && values.includes(value ?? '')
        : e.operator === 'NotIn'
          ? !present || !values.includes(value ?? '')
          : e.operator === 'Exists'
            ? present
            : !present;
    if (!holds) return false;
  }
  return true;
}

/** The part of a credential row the rule reads. */
export type SourceOwner = Pick<InboundCredential, 'source' | 'namespace' | 'resourceName' | 'allowedEndpoints'>;

export type Allowance = { deniedReason: null } | { deniedReason: DeniedReason; message: string };

export interface AllowanceInput {
  source: string;
  /** the endpoint's namespace */
  namespace: string;
  /** its Namespace's labels; undefined = unknown (its name only) */
  namespaceLabels?: Readonly<Record<string, string>> | undefined;
  /** the credential row in effect for the source; undefined = none */
  owner: SourceOwner | undefined;
  /** what a credential that says nothing allows (TENANCY_DEFAULT_ALLOWED_NAMESPACES) */
  defaultFrom: DefaultAllowedNamespaces;
  /**
   * the reserved source of operational events (OPERATIONS_EVENTS_SOURCE), which has no credential:
   * any endpoint may subscribe to it, and receives only what concerns its namespace (docs/operations-events.md)
   */
  operationsSource?: string;
}

/** Whether an endpoint may subscribe to its source, and if not, why (its Ready=False reason and message). */
export function endpointAllowance(input: AllowanceInput): Allowance {
  const { source, namespace, owner } = input;
  // routing by the subject's namespace (db/deliveries.ts) is what keeps a tenant to its own events
  if (source === input.operationsSource) return { deniedReason: null };
  if (!owner) {
    return {
      deniedReason: 'SourceNotFound',
      message: `source "${source}" has no InboundCredential in effect: nothing is routed to this endpoint until one is Ready`,
    };
  }
  // a row without a namespace was written by hand or before tenancy: it restricts nothing
  if (owner.namespace === null) return { deniedReason: null };
  const policy = effectivePolicy(owner.allowedEndpoints, input.defaultFrom);
  const labels = input.namespaceLabels ?? defaultNamespaceLabels(namespace);
  const allowed =
    policy.from === 'All' ||
    (policy.from === 'Same' && namespace === owner.namespace) ||
    (policy.from === 'Selector' && selectorMatches(policy.selector, labels));
  if (allowed) return { deniedReason: null };
  const who = `InboundCredential ${owner.resourceName ?? owner.namespace} of source "${source}"`;
  const said = policy.defaulted
    ? `it sets no spec.allowedEndpoints, and the installation's default is ${policy.from}`
    : `spec.allowedEndpoints.namespaces.from: ${policy.from}`;
  const rule =
    policy.from === 'Same'
      ? `allows endpoints in its own namespace ${owner.namespace} only (${said}); this endpoint is in namespace ${namespace}`
      : `allows endpoints in the namespaces its selector matches (${said}); the labels of namespace ${namespace} do not match`;
  return { deniedReason: 'NotAllowedBySource', message: `${who} ${rule}: nothing is routed to this endpoint` };
}

type Policy = { defaulted: boolean } & ({ from: 'Same' | 'All' } | { from: 'Selector'; selector: LabelSelector });

function effectivePolicy(spec: AllowedEndpoints | null, defaultFrom: DefaultAllowedNamespaces): Policy {
  const from = spec?.namespaces?.from;
  if (from === undefined) return { defaulted: true, from: defaultFrom };
  // a Selector without a selector is refused by the CRD and dev mode; were one stored, it selects nothing
  if (from === 'Selector') return { defaulted: false, from, selector: spec?.namespaces?.selector ?? NOTHING };
  return { defaulted: false, from };
}

const NOTHING: LabelSelector = { matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'DoesNotExist' }] };
