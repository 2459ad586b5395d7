import type { SignatureType } from '../domain/records.js';

/**
 * Calls a provider makes to check an endpoint rather than to deliver an event, answered once their
 * signature is verified and neither stored nor fanned out: Slack's `url_verification` (the
 * challenge echoed, as Slack asks when a Request URL is saved) and GitHub's `ping` (sent when a
 * webhook is created). Undefined when the call is an event.
 */
export type Handshake = { kind: 'slack_url_verification'; answer: { challenge: string } } | { kind: 'github_ping'; answer: { ok: true } };

export function handshakeOf(type: SignatureType | undefined, headers: Record<string, string>, json: unknown): Handshake | undefined {
  if (type === 'GitHub' && headers['x-github-event'] === 'ping') return { kind: 'github_ping', answer: { ok: true } };
  if (type === 'Slack' && typeof json === 'object' && json !== null) {
    const body = json as { type?: unknown; challenge?: unknown };
    if (body.type === 'url_verification' && typeof body.challenge === 'string') {
      return { kind: 'slack_url_verification', answer: { challenge: body.challenge } };
    }
  }
  return undefined;
}
