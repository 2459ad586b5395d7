import { describe, expect, it } from 'vitest';
import { createFilterForecast } from '../../../src/activities/filter-forecast.js';

// Whether an endpoint's filter is expected to accept its next event: a moving average of its
// answers in this worker, started from what the endpoint's row says.
describe('filter forecast', () => {
  const cases: Array<{ name: string; stored: boolean; answers: boolean[]; expects: boolean[] }> = [
    { name: 'a row expecting refusals, one acceptance', stored: false, answers: [true], expects: [false] },
    {
      name: 'a row expecting refusals, acceptances in a row',
      stored: false,
      answers: [true, true, true, true],
      expects: [false, false, false, true],
    },
    { name: 'a row expecting acceptances, one refusal', stored: true, answers: [false], expects: [true] },
    {
      name: 'a row expecting acceptances, refusals in a row',
      stored: true,
      answers: [false, false, false, false],
      expects: [true, true, true, false],
    },
    {
      name: 'a filter that accepts one event in ten, from a row expecting acceptances',
      stored: true,
      answers: [...Array<boolean>(9).fill(false), true],
      expects: [true, true, true, false, false, false, false, false, false, false],
    },
    {
      name: 'one refusal among acceptances does not change the expectation',
      stored: true,
      answers: [true, false, true, true],
      expects: [true, true, true, true],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const forecast = createFilterForecast();
      expect(c.answers.map((accepted) => forecast.note('ep', accepted, c.stored))).toEqual(c.expects);
    });
  }

  it('an endpoint it has heard of goes on from its own average, not from what the row says', () => {
    const forecast = createFilterForecast();
    forecast.note('ep', true, true);
    // another worker has since written "refusals" on the row: this one's average still says acceptances
    expect(forecast.note('ep', false, false)).toBe(true);
  });

  it('beyond 2 000 endpoints the one heard of longest ago starts again from its row', () => {
    const forecast = createFilterForecast();
    for (let i = 0; i < 4; i++) forecast.note('first', true, false);
    expect(forecast.note('first', true, false)).toBe(true);
    for (let i = 0; i < 2_000; i++) forecast.note(`ep-${i}`, false, false);
    expect(forecast.note('first', true, false)).toBe(false);
  });
});
