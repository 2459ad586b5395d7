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
