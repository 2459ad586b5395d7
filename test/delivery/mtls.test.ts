import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { messageAndTarget, outbound, type OutboundRequest } from './outbound.js';
import { createHttpDestination } from '../../src/destinations/http/http-destination.js';
import type { Destination, HttpTarget } from '../../src/delivery/destination.js';
import { endpointTls } from '../../src/custom-resources/endpoint-tls.js';
import { createTestPki, type TestPki } from '../support/certs.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';

// spec.tls against a real HTTPS receiver that requires a client certificate of its own CA, with
// certificates made by the openssl CLI: the private CA replaces the system roots, the client
// certificate is presented, a rotated one is used from the next attempt, and a handshake the
// receiver refuses is a retryable connection failure naming the TLS problem.

const read = (file: string) => readFileSync(file, 'utf8');

let serverPki: TestPki;
let clientPki: TestPki;
let receiver: HttpsReceiver;
let url: string;
let seen: string[];
let destination: Destination<HttpTarget>;

beforeAll(async () => {
  serverPki = createTestPki('receiver');
  clientPki = createTestPki('partner-clients');
  const cert = serverPki.issue('receiver', { ips: ['127.0.0.1'], usage: 'server' });
  receiver = await startHttpsReceiver({ ...cert, clientCa: clientPki.caCert });
  ({ url, clients: seen } = receiver);
  destination = createHttpDestination({ addressPolicy: createAddressPolicy() });
});

afterAll(async () => {
  await destination?.close();
  await receiver?.close();
});

const send = (tls: HttpTarget['tls'], over: Partial<OutboundRequest> = {}) => {
  const { message, target } = messageAndTarget(outbound(url, over));
  return destination.send(message, tls ? { ...target, tls } : target, { timeoutMs: 5_000 });
};

const client = (name: string) => {
  const c = clientPki.issue(name, { usage: 'client' });
  return { certificate: read(c.cert), key: read(c.key) };
};

describe('spec.tls: mTLS and a private CA', () => {
  it('presents the client certificate and trusts the private CA: delivered', async () => {
    const partner = client('webhook-fanout-a');
    const outcome = await send({ ...partner, caBundle: read(serverPki.caCert) });
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    expect(seen.at(-1)).toBe('webhook-fanout-a');
  });

  it('a rotated certificate is used from the next attempt, without a restart', async () => {
    const next = client('webhook-fanout-b');
    const outcome = await send({ ...next, caBundle: read(serverPki.caCert) });
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    expect(seen.at(-1)).toBe('webhook-fanout-b');
  });

  it('without a client certificate the receiver refuses the handshake: a retryable connection failure naming its TLS alert', async () => {
    const outcome = await send({ certificate: null, key: null, caBundle: read(serverPki.caCert) });
    expect(outcome).toMatchObject({ kind: 'retryable', status: null, statusClass: 'network' });
    // TLS 1.3: the receiver sends "certificate required" (alert 116) once it has read our Finished
    expect(outcome.kind !== 'success' && outcome.error).toBe(
      'TLS handshake refused by the receiver: alert "certificate required" (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)',
    );
  });

  it('a client certificate the receiver does not trust: a retryable failure (Node closes without an alert: nothing more to name)', async () => {
    const stranger = createTestPki('strangers').issue('stranger', { usage: 'client' });
    const outcome = await send({ certificate: read(stranger.cert), key: read(stranger.key), caBundle: read(serverPki.caCert) });
    expect(outcome).toMatchObject({ kind: 'retryable', status: null, statusClass: 'network' });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/other side closed|socket|reset/);
  });

  it('without the private CA the system roots do not know the receiver: a retryable failure naming the certificate', async () => {
    const outcome = await send({ ...client('webhook-fanout-c'), caBundle: null });
    expect(outcome).toMatchObject({ kind: 'retryable', status: null });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/certificate/i);
  });
});

describe('endpointTls: what a client certificate Secret may hold', () => {
  const secretOf = (values: Record<string, string>) => async (_name: string, key: string) => values[key] ?? '';
  const ref = { clientCertificateSecretRef: { name: 'partner-client-cert' } };

  it('gives the row the PEM material and the expiry', async () => {
    const c = client('row');
    const tls = await endpointTls(ref, secretOf({ 'tls.crt': c.certificate, 'tls.key': c.key }));
    expect(tls.tlsClientCertificate).toBe(c.certificate);
    expect(tls.tlsClientCertificateExpiresAt!.getTime()).toBeGreaterThan(Date.now());
  });

  it.each([
    ['expired', (c: { certificate: string; key: string }) => ({ 'tls.crt': c.certificate, 'tls.key': c.key }), 2, /expired at 20/],
    [
      'not the key of the certificate',
      (c: { certificate: string; key: string }) => ({ 'tls.crt': c.certificate, 'tls.key': client('other').key }),
      0,
      /is not the key/,
    ],
    [
      'not a certificate',
      (c: { certificate: string; key: string }) => ({ 'tls.crt': 'garbage', 'tls.key': c.key }),
      0,
      /not a PEM certificate/,
    ],
  ])('%s: InvalidClientCertificate, the message without the key', async (_what, values, daysLater, message) => {
    const c = client(`bad-${daysLater}`);
    const now = new Date(Date.now() + daysLater * 86_400_000);
    const err = await endpointTls(ref, secretOf(values(c)), now).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'invalid_client_certificate', message: expect.stringMatching(message) });
    expect(String((err as Error).message)).not.toContain('PRIVATE KEY');
  });

  it('a CA bundle without a certificate is InvalidSecret', async () => {
    const err = await endpointTls({ caBundleRef: { kind: 'Secret', name: 'ca', key: 'ca.crt' } }, secretOf({ 'ca.crt': 'nothing' })).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'invalid_secret' });
  });
});
