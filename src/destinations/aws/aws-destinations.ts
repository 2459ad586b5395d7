import { performance } from 'node:perf_hooks';
import { PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PublishCommand } from '@aws-sdk/client-sns';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Destination, EventBridgeTarget, SendOptions, SnsTarget, SqsTarget } from '../../delivery/destination.js';
import type { Message } from '../../delivery/message.js';
import type { DeliveryOutcome } from '../../delivery/types.js';
import type { Receipt } from '../../domain/records.js';
import type { AwsClients } from './aws-clients.js';
import { classifyAwsError } from './aws-errors.js';
import { awsMessageOf, eventBridgeDetailOf } from './aws-message.js';
import type { SqsDirect } from './sqs-direct.js';
import { isFifo, sendMessageInput, sendMessageUrl, UNORDERED_GROUP } from './sqs-send-message.js';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import { checkLiteralHost } from '../../delivery/guarded-lookup.js';

/**
 * The outbound policy for a host given as an IP address: connecting to one skips the guarded
 * lookup (node's and undici's alike), so an `endpointUrl` or a queue URL such as
 * http://169.254.169.254 is checked here, once per URL (key), before any call (the role's STS call
 * included). A host name is checked by the lookup at each new connection.
 */
function literalCheck(policy: AddressPolicy): (key: string, hostname: () => string) => void {
  const checked = new Set<string>();
  return (key, hostname) => {
    if (checked.has(key)) return;
    const blocked = checkLiteralHost(policy, hostname());
    if (blocked) throw blocked;
    checked.add(key);
  };
}

/** One call with the attempt's deadline, its answer or failure as an outcome. */
async function publish(
  service: string,
  options: SendOptions,
  call: (abortSignal: AbortSignal, started: number) => Promise<{ receipt: Receipt; body: string } | DeliveryOutcome>,
): Promise<DeliveryOutcome> {
  const started = performance.now();
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    const r = await call(signal, started);
    if ('kind' in r) return r;
    return { kind: 'success', status: 200, body: r.body, durationMs: performance.now() - started, statusClass: '2xx', receipt: r.receipt };
  } catch (err) {
    return classifyAwsError(err, service, {
      durationMs: performance.now() - started,
      timeoutMs: options.timeoutMs,
      aborted: signal.aborted,
    });
  }
}

/**
 * SQS: one SendMessage; on a FIFO queue the event id de-duplicates and the ordering key groups.
 * With `direct` (AWS_SQS_SEND=direct) it is one signed POST (sqs-direct.ts), else the SDK client's
 * send(): the same input, credentials, endpoint and signer either way. Direct with AWS_SQS_BATCH=on,
 * a send of a busy queue may be one entry of a SendMessageBatch: its entry's answer is its own.
 */
export function createSqsDestination(
  clients: AwsClients,
  deps: { addressPolicy: AddressPolicy; direct?: SqsDirect },
): Destination<SqsTarget> {
  const { direct } = deps;
  const checkLiteral = literalCheck(deps.addressPolicy);
  return {
    send: (message: Message, to, options) =>
      publish('SQS', options, async (abortSignal, started) => {
        checkLiteral(`${to.endpointUrl ?? ''} ${to.queueUrl}`, () => sendMessageUrl(to).hostname);
        const input = sendMessageInput(message, to);
        const client = clients.of(to).sqs;
        const r = direct
          ? await direct.send(client, to, input, {
              signal: abortSignal,
              deadline: started + options.timeoutMs,
              timeoutMs: options.timeoutMs,
            })
          : await client
              .send(new SendMessageCommand(input), { abortSignal })
              .then((a) => ({ messageId: a.MessageId, sequence: a.SequenceNumber }));
        // waited for a batch (AWS_SQS_BATCH=on) and too little time left to send it: failed unsent, retried
        if ('notSent' in r) {
          return {
            kind: 'retryable',
            status: null,
            body: null,
            error: `SQS: ${r.notSent}`,
            durationMs: performance.now() - started,
            statusClass: 'timeout',
          };
        }
        return {
          receipt: { ...(r.messageId ? { messageId: r.messageId } : {}), ...(r.sequence ? { sequence: r.sequence } : {}) },
          body: `SQS message ${r.messageId ?? '(no id)'}`,
        };
      }),
    close: async () => {
      await direct?.close();
    },
  };
}

/** SNS: one Publish; on a FIFO topic the event id de-duplicates and the ordering key groups. */
export function createSnsDestination(clients: AwsClients, deps: { addressPolicy: AddressPolicy }): Destination<SnsTarget> {
  const checkLiteral = literalCheck(deps.addressPolicy);
  return {
    send: (message, to, options) =>
      publish('SNS', options, async (abortSignal) => {
        if (to.endpointUrl !== null) checkLiteral(to.endpointUrl, () => new URL(to.endpointUrl!).hostname);
        const { text, attributes } = awsMessageOf(message);
        const fifo = isFifo(to.topicArn);
        const r = await clients.of(to).sns.send(
          new PublishCommand({
            TopicArn: to.topicArn,
            Message: text,
            MessageAttributes: attributes,
            ...(fifo ? { MessageDeduplicationId: message.deduplicationId, MessageGroupId: message.orderingKey ?? UNORDERED_GROUP } : {}),
          }),
          { abortSignal },
        );
        return {
          receipt: { ...(r.MessageId ? { messageId: r.MessageId } : {}), ...(r.SequenceNumber ? { sequence: r.SequenceNumber } : {}) },
          body: `SNS message ${r.MessageId ?? '(no id)'}`,
        };
      }),
    close: async () => {},
  };
}

/** EventBridge: one PutEvents entry; an entry the bus refused is classified by its own error code. */
export function createEventBridgeDestination(clients: AwsClients, deps: { addressPolicy: AddressPolicy }): Destination<EventBridgeTarget> {
  const checkLiteral = literalCheck(deps.addressPolicy);
  return {
    send: (message, to, options) =>
      publish('EventBridge', options, async (abortSignal) => {
        if (to.endpointUrl !== null) checkLiteral(to.endpointUrl, () => new URL(to.endpointUrl!).hostname);
        const started = performance.now();
        const r = await clients.of(to).eventBridge.send(
          new PutEventsCommand({
            Entries: [
              {
                EventBusName: to.eventBusName,
                Source: message.attributes.source,
                DetailType: to.detailType ?? message.attributes.type,
                Detail: eventBridgeDetailOf(message),
                ...(message.attributes.time ? { Time: new Date(message.attributes.time) } : {}),
              },
            ],
          }),
          { abortSignal },
        );
        const [entry] = r.Entries ?? [];
        if (!entry?.EventId) {
          // the call passed, the entry did not: its ErrorCode says why, as an SDK error's name would
          const name = entry?.ErrorCode ?? 'NoEventId';
          const err = Object.assign(new Error(entry?.ErrorMessage ?? 'the bus returned no event id'), {
            name,
            $metadata: { httpStatusCode: /Throttl|Internal/.test(name) ? 500 : 400 },
          });
          return classifyAwsError(err, 'EventBridge', {
            durationMs: performance.now() - started,
            timeoutMs: options.timeoutMs,
            aborted: false,
          });
        }
        return { receipt: { messageId: entry.EventId }, body: `EventBridge event ${entry.EventId}` };
      }),
    close: async () => {},
  };
}
