import { createPrivateKey, webcrypto, type KeyObject } from 'node:crypto';

/**
 * The private key of an OAuth2 client that authenticates with PrivateKeyJwt (RFC 7523): PEM, as
 * a Secret holds it (PKCS#8, or PKCS#1 RSA / SEC1 EC). Its type decides the assertion's algorithm
 * as the JOSE registry names them: RSA signs RS256, EC P-256 ES256, P-384 ES384, Ed25519 Ed25519
 * (oauth4webapi reads the algorithm from the CryptoKey). The operator checks the key with
 * `oauth2KeyProblem` so that a key that can not sign is Ready=False, never a failed delivery.
 */

type SignAlgorithm = webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | { name: 'Ed25519' };

/** The WebCrypto algorithm a key of this type signs with, or why it can not sign an assertion. */
function signAlgorithmOf(key: KeyObject): SignAlgorithm | { problem: string } {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) return { problem: 'an RSA key must have at least 2048 bits' };
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return { name: 'ECDSA', namedCurve: 'P-256' };
      if (curve === 'secp384r1') return { name: 'ECDSA', namedCurve: 'P-384' };
      return { problem: 'an EC key must be on P-256 or P-384' };
    }
    case 'ed25519':
      return { name: 'Ed25519' };
    default:
      return { problem: `a ${key.asymmetricKeyType ?? 'symmetric'} key can not sign a client assertion (RSA, EC P-256/P-384 or Ed25519)` };
  }
}

function parse(pem: string): KeyObject | { problem: string } {
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    // the parser's message may quote the input: only say what was expected
    return { problem: 'not a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)' };
  }
}

/** Why this PEM can not sign a client assertion, in words without its value; undefined when it can. */
export function oauth2KeyProblem(pem: string): string | undefined {
  const key = parse(pem);
  if ('problem' in key) return key.problem;
  const algorithm = signAlgorithmOf(key);
  return 'problem' in algorithm ? algorithm.problem : undefined;
}

/** The key as the CryptoKey oauth4webapi signs with (not extractable). Throws for a key oauth2KeyProblem refuses. */
export async function oauth2SigningKey(pem: string): Promise<webcrypto.CryptoKey> {
  const key = parse(pem);
  if ('problem' in key) throw new Error(key.problem);
  const algorithm = signAlgorithmOf(key);
  if ('problem' in algorithm) throw new Error(algorithm.problem);
  const der = key.export({ format: 'der', type: 'pkcs8' });
  return webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']);
}
