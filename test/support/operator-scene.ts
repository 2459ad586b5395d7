import type { Repositories } from '../../src/db/repositories.js';
import type { OperatorOptions } from '../../src/operator/operator.js';
import { createOperatorStore, type OperatorStore } from '../../src/operator/store.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import type { KubeConnection } from './kube.js';
import { createNamespace, settled, sharedKube, startTestOperator, type TestOperator } from './kube-shared.js';

/** What an operator test works in: its own namespace on the shared kube-apiserver, its own database, the operator watching that namespace. */
export interface OperatorScene {
  conn: KubeConnection;
  tdb: TestDatabase;
  /** the operator's view of the database: the rows resources become */
  store: OperatorStore;
  ns: string;
  op: TestOperator;
  /** stops the operator, then drops the database */
  close(): Promise<void>;
}

/**
 * The operator tests' common start: a fresh database (or `database`, left to its owner), a
 * namespace named after `prefix`, and the operator confined to it, settled before the first test.
 */
export async function startOperatorScene(
  prefix: string,
  opts: { operator?: Partial<OperatorOptions>; database?: TestDatabase } = {},
): Promise<OperatorScene> {
  const [conn, tdb] = await Promise.all([sharedKube(), opts.database ?? createTestDatabase()]);
  const ns = await createNamespace(conn, prefix);
  const op = await startTestOperator(conn, tdb.db, { ...opts.operator, namespaces: [ns] });
  await settled(op);
  return {
    conn,
    tdb,
    store: createOperatorStore(tdb.db),
    ns,
    op,
    close: async () => {
      await op.stop();
      if (!opts.database) await tdb.destroy();
    },
  };
}

/**
 * A credential row owning `source` in `namespace`, as the operator writes one for an
 * InboundCredential there (docs/tenancy.md): the endpoints of that namespace may subscribe to it.
 * For tests of endpoints that need no real credential. It names no resource, so an operator
 * confined to its namespaces leaves it alone (no orphan to collect).
 */
export async function ownSource(repos: Pick<Repositories, 'credentials'>, source: string, namespace: string): Promise<void> {
  await repos.credentials.upsertByResourceUid(`test:owner:${source}`, {
    source,
    username: source,
    // a bcrypt hash of nothing anyone sends: ingest never accepts a webhook for it
    passwordHash: `$2b$10$${'.'.repeat(53)}`,
    eventIdRule: null,
    eventTypeRule: null,
    resourceName: null,
    namespace,
  });
}
