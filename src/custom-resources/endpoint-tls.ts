import { X509Certificate, createPrivateKey } from 'node:crypto';
import { permanent } from '../domain/errors.js';
import type { WebhookEndpointSpec } from './specs.js';

/** What spec.tls gives the endpoint row: the PEM material, resolved and checked, and when the certificate expires. */
export interface EndpointTls {
  tlsClientCertificate: string | null;
  tlsClientKey: string | null;
  tlsCaBundle: string | null;
  tlsClientCertificateExpiresAt: Date | null;
}

export const NO_TLS: EndpointTls = {
  tlsClientCertificate: null,
  tlsClientKey: null,
  tlsCaBundle: null,
  tlsClientCertificateExpiresAt: null,
};

/** Resolves a key of a Secret (or a ConfigMap) in the namespace, throwing the resolver's own failures (missing object, key, empty). */
export type SecretValue = (name: string, key: string, what: string, from?: 'Secret' | 'ConfigMap') => Promise<string>;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * spec.tls -> the row's TLS material. A client certificate that does not parse, is not its key's,
 * has expired or is not valid yet is InvalidClientCertificate (the message says its validity, never
 * the key): the row keeps the last good one, and the endpoint is Ready=False until it is replaced.
 * A CA bundle with no certificate that parses is InvalidSecret.
 */
export async function endpointTls(tls: WebhookEndpointSpec['tls'], value: SecretValue, now: Date = new Date()): Promise<EndpointTls> {
  if (!tls) return NO_TLS;
  const out: EndpointTls = { ...NO_TLS };
  const ref = tls.clientCertificateSecretRef;
  if (ref) {
    const what = `tls.clientCertificateSecretRef (Secret ${ref.name})`;
    const certificate = await value(ref.name, 'tls.crt', what);
    const key = await value(ref.name, 'tls.key', what);
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(certificate);
    } catch {
      throw permanent('invalid_client_certificate', `${what}: tls.crt is not a PEM certificate`);
    }
    let matches: boolean;
    try {
      matches = leaf.checkPrivateKey(createPrivateKey(key));
    } catch {
      throw permanent('invalid_client_certificate', `${what}: tls.key is not a PEM private key`);
    }
    if (!matches) throw permanent('invalid_client_certificate', `${what}: tls.key is not the key of the certificate in tls.crt`);
    const notAfter = new Date(leaf.validTo);
    const notBefore = new Date(leaf.validFrom);
    if (notAfter.getTime() <= now.getTime()) {
      throw permanent('invalid_client_certificate', `${what}: the certificate expired at ${notAfter.toISOString()}`);
    }
    if (notBefore.getTime() > now.getTime()) {
      throw permanent('invalid_client_certificate', `${what}: the certificate is not valid before ${notBefore.toISOString()}`);
    }
    out.tlsClientCertificate = certificate;
    out.tlsClientKey = key;
    out.tlsClientCertificateExpiresAt = notAfter;
  }
  const ca = tls.caBundleRef;
  if (ca) {
    const from = ca.kind ?? 'Secret';
    const what = `tls.caBundleRef (${from} ${ca.name}, key ${ca.key})`;
    // a ConfigMap's bundle is read like a Secret's: changing either reconciles the endpoint (no restart)
    const bundle = await value(ca.name, ca.key, what, from);
    const parsed = (bundle.match(PEM_CERTIFICATE) ?? []).filter((pem) => {
      try {
        new X509Certificate(pem);
        return true;
      } catch {
        return false;
      }
    });
    if (parsed.length === 0) throw permanent('invalid_secret', `${what}: holds no PEM certificate`);
    out.tlsCaBundle = parsed.join('\n');
  }
  return out;
}
