import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../src/dev/ports.js';

/**
 * Debian's nginx (apt, installed by scripts/provision.sh and .ci/run) as the reverse proxy in front
 * of an ingest: what the chart's Ingress controller does (ingress-nginx appends the client to
 * X-Forwarded-For the same way), on a loopback port, with a config of its own in a temporary folder,
 * in the foreground, one process.
 */
export const NGINX_PATH = process.env.NGINX_PATH ?? '/usr/sbin/nginx';

export interface Nginx {
  url: string;
  close(): Promise<void>;
}

/** How the proxy tells ingest who its client is. */
export type ForwardingHeader = 'x-forwarded-for' | 'forwarded';

export async function startNginx(opts: {
  upstream: string;
  header?: ForwardingHeader;
  /** the address nginx connects to ingest from (proxy_bind): one ingest does not trust, as a proxy of the senders' own */
  bind?: string;
}): Promise<Nginx> {
  if (!existsSync(NGINX_PATH))
    throw new Error(
      `${NGINX_PATH} is missing: scripts/provision.sh installs Debian's nginx (apt-get install nginx-light), or set NGINX_PATH`,
    );
  const dir = await mkdtemp(path.join(tmpdir(), 'nginx-'));
  const port = await freePort();
  const upstream = new URL(opts.upstream);
  const forwarding =
    (opts.header ?? 'x-forwarded-for') === 'x-forwarded-for'
      ? 'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;'
      : 'proxy_set_header Forwarded "for=$remote_addr;proto=http";';
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, name)};`;
  const conf = `
daemon off;
master_process off;
worker_processes 1;
pid ${path.join(dir, 'nginx.pid')};
error_log ${path.join(dir, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}
  upstream ingest { server ${upstream.hostname}:${upstream.port}; keepalive 16; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://ingest;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      ${forwarding}
      ${opts.bind ? `proxy_bind ${opts.bind};` : ''}
    }
  }
}
`;
  await writeFile(path.join(dir, 'nginx.conf'), conf);
  const child: ChildProcess = spawn(NGINX_PATH, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited at start: ${stderr}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    if (i > 100) throw new Error(`nginx did not listen on ${port}: ${stderr}`);
    await sleep(50);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
