import { describe, expect, it } from 'vitest';
import { to } from '../../../src/console/routes.js';

describe('console routes: every link the console renders', () => {
  it.each([
    ['overview', to.overview(), '/console/'],
    ['overview, last day', to.overview({ range: 'day' }), '/console/?range=day'],
    [
      'events with filters, empty ones left out',
      to.events({ source: 'shop', type: '', status: undefined, cursor: null }),
      '/console/events?source=shop',
    ],
    ['an event', to.event('0b7c6a1e-0000-4000-8000-000000000001'), '/console/events/0b7c6a1e-0000-4000-8000-000000000001'],
    ['a delivery', to.delivery('d1'), '/console/deliveries/d1'],
    ['deliveries of an endpoint', to.deliveries({ endpointId: 'e1', status: 'FAILED' }), '/console/deliveries?endpointId=e1&status=FAILED'],
    ['bulk replay dry run', to.replay({ source: 'shop', limit: 100, run: 'dry' }), '/console/replay?source=shop&limit=100&run=dry'],
  ])('%s', (_name, href, expected) => {
    expect(href).toBe(expected);
  });

  it.each([
    ['a path', '../../api/evil'],
    ['an absolute URL', 'https://evil.example/x'],
    ['a javascript: URL', 'javascript:alert(1)'],
    ['a query and a fragment', 'x?y=1#z'],
  ])('an id from the API stays one path segment of the console: %s', (_name, id) => {
    for (const href of [to.event(id), to.delivery(id)]) {
      expect(href).toMatch(/^\/console\/(events|deliveries)\/[^/?#]+$/);
      expect(decodeURIComponent(href.split('/').pop() ?? '')).toBe(id);
    }
  });

  it('query values are encoded, never markup or a second parameter', () => {
    const href = to.events({ source: 'a&status=FAILED', type: '<script>' });
    expect(new URLSearchParams(href.split('?')[1]).get('source')).toBe('a&status=FAILED');
    expect(href).not.toContain('<');
  });
});
