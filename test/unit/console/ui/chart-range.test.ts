import { describe, expect, it } from 'vitest';
import { fixedYRange, isEmptyRange, yAxisSteps, type Series } from '../../../../src/console/ui/chart-range.js';

const s = (...values: Array<number | null>): Series => ({ label: 'x', values });

describe('isEmptyRange: when a chart says "nothing in this range" instead of drawing an axis', () => {
  it.each<[string, Series[], string | undefined, boolean]>([
    ['no series', [], undefined, true],
    ['counts, all zero (no delivery ended)', [s(0, 0, 0), s(0, 0, 0)], undefined, true],
    ['counts, one non-zero', [s(0, 0, 0), s(0, 1, 0)], undefined, false],
    ['a rate, all null (no delivery)', [s(null, null)], '%', true],
    ['a rate of 0 %: deliveries, none failed', [s(0, null, 0)], '%', false],
    ['latency, one bucket with a value', [s(null, 120)], 'ms', false],
  ])('%s', (_what, series, unit, empty) => {
    expect(isEmptyRange(series, unit)).toBe(empty);
  });
});

describe('fixedYRange: the y axis a chart keeps whatever its values', () => {
  it.each<[string, string | undefined, [number, number] | null]>([
    ['a rate: 0..100 %', '%', [0, 100]],
    ['a count: from its values', undefined, null],
    ['a latency: from its values', 'ms', null],
  ])('%s', (_what, unit, range) => {
    expect(fixedYRange(unit)).toEqual(range);
  });
});

describe('yAxisSteps: where a y axis may put its ticks', () => {
  it.each<[string, string | undefined, boolean]>([
    ['a count: whole numbers only (no 0.25 delivery)', undefined, true],
    ['a rate: uPlot chooses (12.5 % is a rate)', '%', false],
    ['a latency: uPlot chooses', 'ms', false],
  ])('%s', (_what, unit, whole) => {
    const steps = yAxisSteps(unit);
    expect(steps !== null).toBe(whole);
    if (steps === null) return;
    expect(steps.every((v) => Number.isInteger(v) && v >= 1)).toBe(true);
    // ascending, from 1, and enough for any count a chart shows
    expect(steps[0]).toBe(1);
    expect(steps.every((v, i) => i === 0 || v > steps[i - 1]!)).toBe(true);
    expect(steps.at(-1)!).toBeGreaterThanOrEqual(1e12);
    expect(steps.slice(0, 6)).toEqual([1, 2, 5, 10, 20, 50]);
  });
});
