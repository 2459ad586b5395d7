import { describe, expect, it } from 'vitest';
import type { E2ePath, E2eRun } from '../../../bench/e2e-bench.js';
import { floorCpuMs, ownCpuMsPerDelivery, serviceCpuMsPerDelivery, temporalCpu } from '../../../bench/report.js';

// CPU seconds by group over two runs of 100 events x 10 endpoints (2 000 deliveries, 200 workflows)
const cpu = { worker: 4, consumer: 0.5, postgres: 1.5, temporal: 3, 'temporal-postgres': 2, bench: 1, 'bare-worker': 0.2 };
const run = (): E2eRun => ({ events: 100, deliveries: 1000, seconds: 5, deliveriesPerS: 200, cpu: {}, foreignCpuS: 0, wallS: 5 });
const path: E2ePath = {
  events: 100,
  deliveries: 1000,
  seconds: 5,
  deliveriesPerS: 200,
  runs: [run(), run()],
  totalDeliveries: 2000,
  cpu,
  foreignCpuS: 0,
  actions: [],
};

describe("the bench's CPU figures, by whose they are", () => {
  it.each([
    { name: "webhook-fanout itself: worker, consumer and the service's Postgres", ms: ownCpuMsPerDelivery(path), expected: 3 },
    { name: "the whole deployment: Temporal and Temporal's Postgres too", ms: serviceCpuMsPerDelivery(path), expected: 5.5 },
  ])('$name per delivery', ({ ms, expected }) => {
    expect(ms).toBeCloseTo(expected, 6);
  });

  it("Temporal's server and its Postgres apart, per workflow (one per event) and per delivery", () => {
    expect(temporalCpu(path)).toEqual({ serverPerWorkflow: 15, postgresPerWorkflow: 10, serverPerDelivery: 1.5, postgresPerDelivery: 1 });
  });

  it("an empty workflow's Temporal floor counts Temporal's Postgres with the server", () => {
    const floor = floorCpuMs({ ...path, totalDeliveries: 200 });
    expect(floor.temporal).toBeCloseTo(25, 6);
    expect(floor.worker).toBeCloseTo(1, 6);
  });
});
