import { describe, expect, it } from 'vitest';
import { parseCspReport } from '../../../src/console-server/csp-report.js';
import { cacheControlFor, contentSecurityPolicy, isAppRoute } from '../../../src/console-server/security-headers.js';

describe("the console's Content-Security-Policy", () => {
  const csp = contentSecurityPolicy('https://tenant.eu.auth0.com/some/path');
  const directives = new Map(csp.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));

  it.each([
    ['default-src', "'self'"],
    ['script-src', "'self'"],
    ['style-src', "'self'"],
    ['img-src', "'self' data:"],
    ['connect-src', "'self' https://tenant.eu.auth0.com"],
    ['form-action', "'self' https://tenant.eu.auth0.com"],
    ['frame-ancestors', "'none'"],
    ['base-uri', "'none'"],
    ['object-src', "'none'"],
    ['report-uri', '/console/csp-report'],
  ])('%s %s', (name, value) => {
    expect(directives.get(name)).toBe(value);
  });

  it('allows no inline code, no eval and no host but the identity provider', () => {
    expect(csp).not.toMatch(/unsafe-|\*|https?:(?!\/\/tenant\.eu\.auth0\.com)/);
  });
});

describe('cache policy and app routes', () => {
  it.each([
    ['assets/index-BxY3k2aZ.js', 'public, max-age=31536000, immutable'],
    ['assets/chunks/vendor-a_b-C9d8.css', 'public, max-age=31536000, immutable'],
    ['index.html', 'no-cache'],
    ['favicon.svg', 'no-cache'],
    ['assets/logo.svg', 'no-cache'],
    ['assets/index-short.js', 'no-cache'],
  ])('%s -> %s', (file, expected) => {
    expect(cacheControlFor(file)).toBe(expected);
  });

  it.each([
    ['', true],
    ['events', true],
    ['events/3f0c2b6e-1c1d-4a59-9a8e-0d5f2f4f2b11', true],
    ['callback', true],
    ['assets/index-BxY3k2aZ.js', false],
    ['robots.txt', false],
  ])('%j is a page of the app: %s', (p, expected) => {
    expect(isAppRoute(p)).toBe(expected);
  });
});

describe('CSP reports: attacker-controlled text, bounded', () => {
  it.each([
    {
      name: 'report-uri body',
      body: {
        'csp-report': {
          'document-uri': 'http://h/console/',
          'violated-directive': 'script-src-elem',
          'effective-directive': 'script-src-elem',
          'blocked-uri': 'inline',
          'script-sample': 'alert(1)',
        },
      },
      expected: [{ directive: 'script-src-elem', blockedUri: 'inline', documentUri: 'http://h/console/', sample: 'alert(1)' }],
    },
    {
      name: 'Reporting API body',
      body: [
        {
          type: 'csp-violation',
          body: { documentURL: 'http://h/console/', effectiveDirective: 'connect-src', blockedURL: 'https://evil.example/x', sample: '' },
        },
        { type: 'deprecation', body: {} },
      ],
      expected: [{ directive: 'connect-src', blockedUri: 'https://evil.example/x', documentUri: 'http://h/console/', sample: '' }],
    },
    {
      name: 'unknown directive becomes other',
      body: { 'csp-report': { 'effective-directive': 'x'.repeat(500) } },
      expected: [{ directive: 'other', blockedUri: '', documentUri: '', sample: '' }],
    },
    { name: 'not a report', body: { hello: 'world' }, expected: [] },
    { name: 'null', body: null, expected: [] },
  ])('$name', ({ body, expected }) => {
    expect(parseCspReport(body)).toEqual(expected);
  });

  it('cuts text and the number of violations', () => {
    const [v] = parseCspReport({ 'csp-report': { 'blocked-uri': 'a'.repeat(10_000) } });
    expect(v?.blockedUri).toHaveLength(200);
    expect(parseCspReport(Array.from({ length: 100 }, () => ({ type: 'csp-violation', body: {} })))).toHaveLength(20);
  });
});
