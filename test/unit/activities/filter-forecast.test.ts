import { describe, expect, it } from 'vitest';
import { createFilterForecast, MAX_LIKELY } from '../../../src/activities/filter-forecast.js';

// Which filtered endpoints' rows prepare inserts before their filter decides: those whose filter
// accepted most of the events this worker saw for them lately.
describe('filter forecast', () => {
  const cases: Array<{ name: string; outcomes: boolean[]; likely: boolean }> = [
    { name: 'an endpoint never heard of', outcomes: [], likely: false },
    { name: 'one accepted event', outcomes: [true], likely: true },
    { name: 'one refused event', outcomes: [false], likely: false },
    { name: 'many accepted, then one refused', outcomes: [true, true, true, true, true, false], likely: true },
    { name: 'many accepted, then refused four times', outcomes: [true, true, true, true, true, false, false, false, false], likely: false },
    { name: 'many refused, then one accepted', outcomes: [false, false, false, false, true], likely: false },
    { name: 'many refused, then accepted four times', outcomes: [false, false, false, false, true, true, true, true], likely: true },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.likely ? 'expected to accept' : 'decides first'}`, () => {
      const forecast = createFilterForecast();
      for (const accepted of c.outcomes) forecast.note('ep', accepted);
      forecast.note('other', true);
      expect(forecast.likely().includes('ep')).toBe(c.likely);
      expect(forecast.likely()).toContain('other');
    });
  }

  it(`names at most ${MAX_LIKELY} endpoints, those heard of most recently`, () => {
    const forecast = createFilterForecast();
    for (let i = 0; i < MAX_LIKELY + 100; i++) forecast.note(`ep-${i}`, true);
    forecast.note('ep-0', true);
    const likely = forecast.likely();
    expect(likely).toHaveLength(MAX_LIKELY);
    expect(likely[0]).toBe('ep-0');
    expect(likely).toContain(`ep-${MAX_LIKELY + 99}`);
    expect(likely).not.toContain('ep-1');
  });

  it('forgets the endpoints heard of longest ago beyond a bound, and an answer changes the list at once', () => {
    const forecast = createFilterForecast();
    forecast.note('a', true);
    expect(forecast.likely()).toEqual(['a']);
    forecast.note('a', false);
    forecast.note('a', false);
    forecast.note('a', false);
    forecast.note('a', false);
    expect(forecast.likely()).toEqual([]);
    for (let i = 0; i < 2_100; i++) forecast.note(`x-${i}`, false);
    forecast.note('a', true);
    expect(forecast.likely()).toEqual(['a']);
  });
});
