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
