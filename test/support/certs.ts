import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface TestPki {
  dir: string;
  /** the CA's certificate (PEM file) */
  caCert: string;
  /** a certificate for `names` signed by the CA, and its key */
  issue(name: string, opts: { dnsNames?: string[]; ips?: string[]; usage?: 'server' | 'client' | 'both' }): { cert: string; key: string };
  /** a client certificate signed by the CA that expired long ago (valid 2020-01-01 to 2020-01-02), and its key */
  issueExpired(name: string): { cert: string; key: string };
}

/**
 * A private CA made with the openssl CLI, as an operator makes one: certificates for servers (with
 * subjectAltNames) and for clients (mTLS). Keys are EC P-256, valid for a day.
 */
export function createTestPki(label: string): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), `pki-${label}-`));
  // Postgres runs as the "postgres" user when the tests run as root: it must reach the folder
  chmodSync(dir, 0o755);
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const caKey = path.join(dir, 'ca.key');
  const caCert = path.join(dir, 'ca.crt');
  openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey);
  openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    caKey,
    '-sha256',
    '-days',
    '1',
    '-subj',
    `/CN=${label} test CA`,
    '-out',
    caCert,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  return {
    dir,
    caCert,
    issue(name, opts) {
      const key = path.join(dir, `${name}.key`);
      const csr = path.join(dir, `${name}.csr`);
      const cert = path.join(dir, `${name}.crt`);
      const ext = path.join(dir, `${name}.ext`);
      const sans = [...(opts.dnsNames ?? []).map((d) => `DNS:${d}`), ...(opts.ips ?? []).map((i) => `IP:${i}`)];
      writeFileSync(
        ext,
        [
          'basicConstraints=CA:FALSE',
          'keyUsage=critical,digitalSignature,keyEncipherment',
          `extendedKeyUsage=${{ server: 'serverAuth', client: 'clientAuth', both: 'serverAuth,clientAuth' }[opts.usage ?? 'server']}`,
          ...(sans.length > 0 ? [`subjectAltName=${sans.join(',')}`] : []),
        ].join('\n') + '\n',
      );
      openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key);
      // PKCS#8: what every TLS stack here reads (Postgres, Go's crypto/tls, rustls, Node)
      openssl('pkcs8', '-topk8', '-nocrypt', '-in', key, '-out', `${key}.p8`);
      execFileSync('mv', [`${key}.p8`, key]);
      openssl('req', '-new', '-key', key, '-subj', `/CN=${name}`, '-out', csr);
      openssl(
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        caCert,
        '-CAkey',
        caKey,
        '-CAcreateserial',
        '-days',
        '1',
        '-sha256',
        '-extfile',
        ext,
        '-out',
        cert,
      );
      chmodSync(key, 0o600);
      return { cert, key };
    },
    issueExpired(name) {
      const key = path.join(dir, `${name}.key`);
      const csr = path.join(dir, `${name}.csr`);
      const cert = path.join(dir, `${name}.crt`);
      // `openssl ca` takes explicit validity dates (x509 -days can not go below 1); its own small config
      const conf = path.join(dir, `${name}.ca.cnf`);
      writeFileSync(path.join(dir, `${name}.index`), '');
      writeFileSync(path.join(dir, `${name}.serial`), '01\n');
      writeFileSync(
        conf,
        [
          '[ca]',
          'default_ca = test',
          '[test]',
          `database = ${name}.index`,
          'new_certs_dir = .',
          `serial = ${name}.serial`,
          'default_md = sha256',
          'policy = any',
          '[any]',
          'commonName = supplied',
          '',
        ].join('\n'),
      );
      openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key);
      openssl('req', '-new', '-key', key, '-subj', `/CN=${name}`, '-out', csr);
      openssl(
        'ca',
        '-batch',
        '-config',
        conf,
        '-cert',
        caCert,
        '-keyfile',
        caKey,
        '-in',
        csr,
        '-out',
        cert,
        '-notext',
        '-startdate',
        '20200101000000Z',
        '-enddate',
        '20200102000000Z',
      );
      return { cert, key };
    },
  };
}

/** Postgres refuses a key readable by others and must own it: when running as root, give it to the postgres user. */
export function keyForPostgres(key: string): void {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return;
  const line = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(key, Number(line), gid);
  chmodSync(key, 0o600);
}
