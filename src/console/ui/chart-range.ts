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
