import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import { ProxyUnreachableError, proxyFailureOf, proxyFailureOfResponse } from '../../../../src/destinations/http/forward-proxy.js';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3128'), { code: 'ECONNREFUSED' });

describe("proxyFailureOf: what a proxied request's error says of the proxy", () => {
  it.each([
    // the error, the proxy's failure (null: the receiver's)
    ['the connection to the proxy refused', new ProxyUnreachableError(refused), { reason: 'unreachable', status: null }],
    [
      'the same, wrapped by undici',
      new Error('fetch failed', { cause: new ProxyUnreachableError(refused) }),
      { reason: 'unreachable', status: null },
    ],
    [
      'the proxy closed before answering CONNECT',
      new errors.ProxyConnectionError(new Error('other side closed')),
      { reason: 'unreachable', status: null },
    ],
    [
      'CONNECT answered 407',
      new errors.RequestAbortedError('Proxy response (407) !== 200 when HTTP Tunneling'),
      { reason: 'auth_required', status: 407 },
    ],
    // tinyproxy answers 401 to wrong credentials: to a CONNECT it can only be the proxy's
    [
      'CONNECT answered 401',
      new errors.RequestAbortedError('Proxy response (401) !== 200 when HTTP Tunneling'),
      { reason: 'auth_required', status: 401 },
    ],
    [
      'CONNECT answered 502',
      new errors.RequestAbortedError('Proxy response (502) !== 200 when HTTP Tunneling'),
      { reason: 'proxy_error', status: 502 },
    ],
    [
      'CONNECT answered 503',
      new errors.RequestAbortedError('Proxy response (503) !== 200 when HTTP Tunneling'),
      { reason: 'proxy_error', status: 503 },
    ],
    [
      'a forwarded request answered 407',
      new errors.InvalidArgumentError('Proxy Authentication Required (407)'),
      { reason: 'auth_required', status: 407 },
    ],
    // the proxy's rules refuse this target, or it could not reach the receiver (tinyproxy: 500): the endpoint's
    ['CONNECT answered 403', new errors.RequestAbortedError('Proxy response (403) !== 200 when HTTP Tunneling'), null],
    ['CONNECT answered 500', new errors.RequestAbortedError('Proxy response (500) !== 200 when HTTP Tunneling'), null],
    // the receiver's, through the tunnel
    ['a refused TLS handshake', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), null],
    [
      'a certificate the CA does not know',
      Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
      null,
    ],
    ['a plain refused connection (not marked as the proxy)', refused, null],
    ['an abort', new DOMException('The operation was aborted due to timeout', 'TimeoutError'), null],
  ])('%s', (_, err, expected) => {
    const failure = proxyFailureOf(err);
    if (expected === null) expect(failure).toBeNull();
    else expect(failure).toMatchObject(expected);
  });

  it('names the proxy and its words, one line', () => {
    expect(proxyFailureOf(new ProxyUnreachableError(refused))?.error).toBe(
      'forward proxy unreachable: connect ECONNREFUSED 127.0.0.1:3128',
    );
    expect(proxyFailureOf(new errors.RequestAbortedError('Proxy response (407) !== 200 when HTTP Tunneling'))?.error).toBe(
      'forward proxy answered 407 (credentials refused)',
    );
  });
});

describe("proxyFailureOfResponse: an http target's answer through the proxy", () => {
  it.each([
    [407, {}, { reason: 'auth_required', status: 407 }],
    [502, { 'proxy-status': 'squid; error=connection_refused' }, { reason: 'proxy_error', status: 502 }],
    [503, { 'x-squid-error': 'ERR_CONNECT_FAIL 111' }, { reason: 'proxy_error', status: 503 }],
    // relayed as the receiver answered them
    [502, {}, null],
    [503, { 'retry-after': '5' }, null],
    [500, { 'proxy-status': 'tinyproxy' }, null],
    [200, {}, null],
    // a receiver's 401 relayed: the endpoint's answer (tinyproxy's own 401 to wrong credentials can not be told from it)
    [401, {}, null],
  ])('%i %j', (status, headers, expected) => {
    const failure = proxyFailureOfResponse(status, headers);
    if (expected === null) expect(failure).toBeNull();
    else expect(failure).toMatchObject(expected);
  });
});
