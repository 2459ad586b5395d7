import { describe, expect, it } from 'vitest';
import { loadIngestConfig } from '../../../src/config/config.js';
import { problemsOf } from '../../support/config-problems.js';

const BASE = { DATABASE_URL: 'postgres://db/x', TOPIC_ARN: 'arn:aws:sns:us-east-1:0:t', ADMIN_API_ENABLED: 'false' };

describe('INGEST_TRUSTED_PROXIES: the proxies whose forwarding headers name the client', () => {
  it.each([
    { value: undefined, want: [] },
    { value: '', want: [] },
    { value: '10.0.0.0/8', want: ['10.0.0.0/8'] },
    { value: ' 10.42.0.0/16 , 192.0.2.10, fd00::/8 ', want: ['10.42.0.0/16', '192.0.2.10', 'fd00::/8'] },
  ])('$value: $want', ({ value, want }) => {
    expect(loadIngestConfig({ ...BASE, INGEST_TRUSTED_PROXIES: value }).trustedProxies).toEqual(want);
  });

  it('names every entry that is not a CIDR, with the other problems of the environment', () => {
    expect(
      problemsOf(() => loadIngestConfig({ ...BASE, INGEST_TRUSTED_PROXIES: '10.0.0.0/8,ingress-nginx,10.0.0.0/33', PORT: 'x' })),
    ).toEqual(
      expect.arrayContaining([
        'INGEST_TRUSTED_PROXIES: invalid CIDR "ingress-nginx": not an IPv4 or IPv6 address',
        'INGEST_TRUSTED_PROXIES: invalid CIDR "10.0.0.0/33": prefix length must be an integer 0..32',
        expect.stringContaining('PORT'),
      ]),
    );
  });
});
