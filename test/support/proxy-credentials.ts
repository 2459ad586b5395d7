import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The forward proxy's Basic credentials as two files, as the chart mounts its Secret for the worker. */
export interface ProxyCredentialFiles {
  /** DELIVERY_PROXY_USERNAME_FILE and DELIVERY_PROXY_PASSWORD_FILE: a deliveryProxy's `credentials` */
  files: { usernameFile: string; passwordFile: string };
  /** writes a new password, as a rotated Secret does (a trailing newline, as `kubectl create secret --from-file` keeps it) */
  rotate(password: string): void;
}

/** Writes `username` and `password` into files of a new temporary folder. */
export function writeProxyCredentialFiles(username: string, password: string): ProxyCredentialFiles {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxy-credentials-'));
  const files = { usernameFile: path.join(dir, 'username'), passwordFile: path.join(dir, 'password') };
  const rotate = (next: string): void => writeFileSync(files.passwordFile, `${next}\n`);
  writeFileSync(files.usernameFile, username);
  rotate(password);
  return { files, rotate };
}
