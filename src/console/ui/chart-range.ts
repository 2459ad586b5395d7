export interface Series {
  label: string;
  values: ReadonlyArray<number | null>;
}

/**
 * Nothing to draw: no value at all, or, for a count (no unit), only zeros. uPlot would scale a
 * flat zero line to 0..100, an axis that reads like data; a rate of 0 % is a figure, though.
 */
export function isEmptyRange(series: readonly Series[], unit: string | undefined): boolean {
  return series.every((s) => s.values.every((v) => v === null || (unit === undefined && v === 0)));
}

/**
 * The y range a chart of this unit keeps whatever its values: a rate is 0..100 % (uPlot's own range
 * padded a 100 % rate to the middle of a 0..200 % axis, a rate no endpoint can have). Null: uPlot's
 * own range, from the values. Pure.
 */
export function fixedYRange(unit: string | undefined): [number, number] | null {
  return unit === '%' ? [0, 100] : null;
}

/** 1, 2, 5, 10, 20, 50, ... up to 5e15: whole steps only. */
const WHOLE_STEPS: readonly number[] = Array.from({ length: 16 }, (_, e) => [1, 2, 5].map((m) => m * 10 ** e)).flat();

/**
 * The steps a chart's y axis may put its ticks at: a count (no unit) only whole ones, since uPlot's
 * own steps put 0.25 deliveries between 0 and 1 on a small count's axis. Null: uPlot's own (a rate
 * or a latency can be fractional). Pure.
 */
export function yAxisSteps(unit: string | undefined): readonly number[] | null {
  return unit === undefined ? WHOLE_STEPS : null;
}
