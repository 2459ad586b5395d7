/**
 * Reading a browser's CSP violation report: the legacy report-uri body
 * ({"csp-report": {...}}, application/csp-report) and the Reporting API's
 * ([{type: "csp-violation", body: {...}}], application/reports+json). Everything in it is
 * attacker-controlled: only a known directive name becomes a metric label, and text is cut short.
 */

export interface CspViolation {
  /** a directive of the policy (label of the metric), else "other" */
  directive: string;
  blockedUri: string;
  documentUri: string;
  sample: string;
}

const DIRECTIVES = new Set([
  'default-src',
  'script-src',
  'script-src-elem',
  'script-src-attr',
  'style-src',
  'style-src-elem',
  'style-src-attr',
  'img-src',
  'font-src',
  'connect-src',
  'object-src',
  'frame-src',
  'worker-src',
  'frame-ancestors',
  'base-uri',
  'form-action',
  'trusted-types',
  'require-trusted-types-for',
]);

export const REPORT_TEXT_LIMIT = 200;

const text = (v: unknown): string => (typeof v === 'string' ? v.slice(0, REPORT_TEXT_LIMIT) : '');

function violationOf(body: Record<string, unknown>): CspViolation {
  // legacy reports say violated-directive / effective-directive, the Reporting API effectiveDirective
  const named = text(body['effective-directive'] ?? body.effectiveDirective ?? body['violated-directive']).split(' ')[0] ?? '';
  return {
    directive: DIRECTIVES.has(named) ? named : 'other',
    blockedUri: text(body['blocked-uri'] ?? body.blockedURL),
    documentUri: text(body['document-uri'] ?? body.documentURL),
    sample: text(body['script-sample'] ?? body.sample),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The violations a report body carries (at most `max`), or none when it is not a report. */
export function parseCspReport(body: unknown, max = 20): CspViolation[] {
  if (isObject(body) && isObject(body['csp-report'])) return [violationOf(body['csp-report'])];
  if (Array.isArray(body)) {
    return body
      .filter((r): r is Record<string, unknown> => isObject(r) && r.type === 'csp-violation' && isObject(r.body))
      .slice(0, max)
      .map((r) => violationOf(r.body as Record<string, unknown>));
  }
  return [];
}
