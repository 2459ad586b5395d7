import { describe, expect, it } from 'vitest';
import { parseErrorCode, parsePublishBatchResult, publishBatchBody } from '../../../src/transport/sns-publish-batch.js';

// SNS's answers as AWS documents them for PublishBatch (query protocol, XML)
const ok = (ids: string[]): string =>
  `<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishBatchResult><Failed/><Successful>${ids
    .map((id) => `<member><Id>${id}</Id><MessageId>mid-${id}</MessageId></member>`)
    .join('')}</Successful></PublishBatchResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></PublishBatchResponse>`;

const PARTIAL = `<?xml version="1.0"?>
<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
  <PublishBatchResult>
    <Failed>
      <member>
        <Code>InvalidParameter</Code>
        <Id>e1</Id>
        <Message>Invalid parameter: Message too long &amp; &lt;wrong&gt;</Message>
        <SenderFault>true</SenderFault>
      </member>
    </Failed>
    <Successful>
      <member>
        <Id>e0</Id>
        <MessageId>567910cd-659e-55d4-8ccb-5aaf14679dc0</MessageId>
      </member>
    </Successful>
  </PublishBatchResult>
  <ResponseMetadata><RequestId>d74b8436-ae13-5ab4-a9ff-ce54dfea72a0</RequestId></ResponseMetadata>
</PublishBatchResponse>`;

describe('parsePublishBatchResult: the entries SNS did not take', () => {
  it.each<[string, string, string[], Record<string, string>]>([
    ['all taken', ok(['e0', 'e1', 'e2']), ['e0', 'e1', 'e2'], {}],
    ['one failed, with its code', PARTIAL, ['e0', 'e1'], { e1: 'InvalidParameter' }],
    ['an id the answer does not name counts as not taken', ok(['e0']), ['e0', 'e1'], { e1: 'NoResult' }],
    [
      'an id only in Failed, without a code',
      '<PublishBatchResult><Failed><member><Id>e0</Id></member></Failed></PublishBatchResult>',
      ['e0'],
      { e0: 'Failed' },
    ],
    ['an empty or foreign answer takes nothing', '<html>gateway</html>', ['e0', 'e1'], { e0: 'NoResult', e1: 'NoResult' }],
    ['ids are compared decoded', ok(['a&amp;b']), ['a&b'], {}],
    ['ids the call did not send are ignored', ok(['e0', 'e9']), ['e0'], {}],
  ])('%s', (_what, xml, ids, failed) => {
    expect(Object.fromEntries(parsePublishBatchResult(xml, ids))).toEqual(failed);
  });
});

describe("parseErrorCode: SNS's code in an error answer", () => {
  it.each<[string, string, string | undefined]>([
    [
      'not found',
      '<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>NotFound</Code><Message>Topic does not exist</Message></Error><RequestId>x</RequestId></ErrorResponse>',
      'NotFound',
    ],
    ['throttled, with whitespace', '<ErrorResponse>\n <Error>\n  <Code> Throttling </Code>\n </Error>\n</ErrorResponse>', 'Throttling'],
    [
      'a dotted code',
      '<ErrorResponse><Error><Code>AWS.SimpleQueueService.NonExistentQueue</Code></Error></ErrorResponse>',
      'AWS.SimpleQueueService.NonExistentQueue',
    ],
    ['no Error element', '<html><body>502 Bad Gateway</body></html>', undefined],
    ['a Code outside Error is not taken', '<Other><Code>X</Code></Other>', undefined],
    ['text that is no identifier is not repeated into logs', '<Error><Code>secret value: abc</Code></Error>', undefined],
  ])('%s', (_what, xml, code) => {
    expect(parseErrorCode(xml)).toBe(code);
  });
});

describe('publishBatchBody: the query-protocol form', () => {
  it.each<[string, string]>([
    ['a JSON message', '{"eventId":"2f1c0b7e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"}'],
    ["the characters encodeURIComponent leaves alone: !'()*", `it's (all) *fine*!`],
    ['form separators and spaces', 'a=b&c=d +e'],
    ['unicode', 'héllo ✓ 日本'],
  ])('%s round-trips through form decoding', (_what, message) => {
    const topicArn = 'arn:aws:sns:eu-west-1:123456789012:webhook-fanout-events';
    const body = publishBatchBody(topicArn, [
      { id: 'e0', message },
      { id: 'e1', message: 'second' },
    ]);
    // RFC 3986: nothing but unreserved characters and %XX escapes inside the values
    expect(body).toMatch(/^[A-Za-z0-9\-._~%=&]+$/);
    const params = Object.fromEntries(new URLSearchParams(body));
    expect(params).toEqual({
      Action: 'PublishBatch',
      Version: '2010-03-31',
      TopicArn: topicArn,
      'PublishBatchRequestEntries.member.1.Id': 'e0',
      'PublishBatchRequestEntries.member.1.Message': message,
      'PublishBatchRequestEntries.member.2.Id': 'e1',
      'PublishBatchRequestEntries.member.2.Message': 'second',
    });
  });
});
