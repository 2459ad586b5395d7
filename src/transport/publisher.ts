import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import { internal, transient } from '../domain/errors.js';
import { encodeEventMessage, isEventId } from './event-message.js';

export interface EventPublisher {
  /** Resolves once the topic accepted the event id; throws a transient AppError otherwise. */
  publish(eventId: string): Promise<void>;
}

export function createSnsPublisher(deps: { sns: SNSClient; topicArn: string }): EventPublisher {
  const { sns, topicArn } = deps;
  return {
    async publish(eventId) {
      // a malformed id would only become a poison message downstream: refuse it here
      if (!isEventId(eventId)) throw internal('invalid_event_id', 'event id to publish is not a UUID');
      try {
        await sns.send(new PublishCommand({ TopicArn: topicArn, Message: encodeEventMessage(eventId) }));
      } catch (err) {
        // the message names only the error class and status: SDK messages can quote request details
        throw transient('publish_failed', `publishing event ${eventId} failed: ${summarize(err)}`, err);
      }
    },
  };
}

function summarize(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown error';
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const code = (err as { code?: unknown }).code;
  const parts = [err.name];
  if (typeof code === 'string' && code !== err.name) parts.push(code);
  if (status !== undefined) parts.push(`HTTP ${status}`);
  return parts.join(' ');
}
