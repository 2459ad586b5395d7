import type { Knex } from 'knex';
import type { Db } from '../../src/db/knex.js';

/** One node of Postgres's EXPLAIN (FORMAT JSON) plan; with ANALYZE, what it really read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Heap Fetches'?: number;
  Plans?: PlanNode[];
}

/** The plan's nodes, depth first. */
export function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/** The nodes of the plan Postgres chooses for a statement (`analyze`: run it, with the rows each node read). */
export async function planOf(
  db: Db,
  sql: string,
  bindings: readonly Knex.RawBinding[],
  opts: { analyze?: boolean } = {},
): Promise<PlanNode[]> {
  const res = await db.raw<{ rows: Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }> }>(
    `EXPLAIN (FORMAT JSON${opts.analyze ? ', ANALYZE' : ''}) ${sql}`,
    bindings,
  );
  const plan = res.rows[0]?.['QUERY PLAN'][0]?.Plan;
  if (!plan) throw new Error(`no plan for ${sql}`);
  return nodesOf(plan);
}
