import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubectl, startKubeControlPlane, OPERATOR_NAMESPACE, type KubeConnection, type KubeControlPlane } from './kube.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Lives in vitest's main process (global setup) and starts the shared Kubernetes control plane
 * only when the first test file asks for it (GET /control-plane), so runs without operator tests
 * pay nothing. Test files run in other processes, hence the tiny HTTP interface. The control plane
 * is bootstrapped once, with kubectl: the CRDs (charts/webhook-fanout/crds/), the operator's namespace and its RBAC
 * (deploy/rbac/). Teardown stops etcd and kube-apiserver.
 */
export interface KubeBroker {
  url: string;
  stop(): Promise<void>;
}

async function bootstrap(cp: KubeControlPlane): Promise<void> {
  await kubectl(cp, ['create', 'namespace', OPERATOR_NAMESPACE]);
  await kubectl(cp, ['apply', '-f', path.join(REPO_ROOT, 'charts/webhook-fanout/crds'), '-f', path.join(REPO_ROOT, 'deploy/rbac')]);
  await kubectl(cp, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/webhookendpoints.webhookfanout.io',
    'crd/inboundcredentials.webhookfanout.io',
  ]);
}

export async function startKubeBroker(): Promise<KubeBroker> {
  let plane: Promise<KubeControlPlane> | undefined;
  const ensure = () => {
    plane ??= (async () => {
      const cp = await startKubeControlPlane();
      try {
        await bootstrap(cp);
      } catch (err) {
        await cp.stop();
        throw err;
      }
      return cp;
    })();
    // a failed start is not cached: the next file tries again and reports its own error
    plane.catch(() => (plane = undefined));
    return plane;
  };
  const server = http.createServer((req, res) => {
    if (req.url !== '/control-plane') {
      res.writeHead(404).end();
      return;
    }
    ensure()
      .then((cp) => {
        const conn: KubeConnection = {
          server: cp.server,
          caPem: cp.caPem,
          adminToken: cp.adminToken,
          operatorToken: cp.operatorToken,
          kubeconfigPath: cp.kubeconfigPath,
          etcdUrl: cp.etcdUrl,
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(conn));
      })
      .catch((err: unknown) => {
        res.writeHead(503, { 'content-type': 'text/plain' }).end(err instanceof Error ? err.message : String(err));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      const p = plane;
      plane = undefined;
      if (p) await p.then((cp) => cp.stop()).catch(() => {});
    },
  };
}
