import { permanent } from '../domain/errors.js';
import { HTTP_DESTINATION, type BrokerTls, type DestinationSecrets, type EndpointDestination } from '../domain/records.js';
import type { DestinationSpec } from './specs.js';

/** Reads a key of a Secret of the endpoint's namespace (to-rows.ts resolves it); `what` names the field in its messages. */
export type ReadSecret = (ref: { name: string; key: string }, what: string) => Promise<string>;

/** spec.destination as the row keeps it: the destination without a secret, its credentials apart, the address the row shows as url. */
export interface DestinationRow {
  destination: EndpointDestination;
  destinationSecrets: DestinationSecrets;
  /** what the row's url says for a destination that is not HTTP (never a credential); null: HTTP, spec.url */
  address: string | null;
}

/**
 * spec.destination -> the row's destination, with the credentials its Secrets hold read from the
 * endpoint's namespace only (tenancy: a Secret of another namespace can not be named). Checks what
 * the CRD's CEL checks inside the blocks, in its words, so dev mode refuses the same manifests.
 */
export async function destinationRow(d: DestinationSpec | undefined, readSecret: ReadSecret): Promise<DestinationRow> {
  const secrets: DestinationSecrets = {};
  const tls = async (t: { caBundleRef?: { name: string; key: string } } | undefined, field: string): Promise<BrokerTls | null> => {
    if (t === undefined) return null;
    if (t.caBundleRef) secrets.caBundle = await readSecret(t.caBundleRef, `${field}.tls.caBundleRef`);
    return { caBundle: t.caBundleRef !== undefined };
  };
  const aws = (b: { region: string; endpointUrl?: string; roleArn?: string }) => ({
    region: b.region,
    endpointUrl: b.endpointUrl ?? null,
    roleArn: b.roleArn ?? null,
  });
  const together = (field: string, username: string | undefined, ref: unknown): void => {
    if ((username === undefined) !== (ref === undefined)) {
      throw permanent('invalid_spec', `${field}.username and ${field}.passwordSecretRef go together`);
    }
  };

  switch (d?.type ?? 'HTTP') {
    case 'HTTP':
      return { destination: HTTP_DESTINATION, destinationSecrets: secrets, address: null };
    case 'SQS': {
      const b = d!.sqs!;
      return { destination: { type: 'SQS', queueUrl: b.queueUrl, ...aws(b) }, destinationSecrets: secrets, address: b.queueUrl };
    }
    case 'SNS': {
      const b = d!.sns!;
      return { destination: { type: 'SNS', topicArn: b.topicArn, ...aws(b) }, destinationSecrets: secrets, address: b.topicArn };
    }
    case 'EventBridge': {
      const b = d!.eventBridge!;
      return {
        destination: { type: 'EventBridge', eventBusName: b.eventBusName, detailType: b.detailType ?? null, ...aws(b) },
        destinationSecrets: secrets,
        address: `eventbridge://${b.region}/${b.eventBusName}`,
      };
    }
    case 'Kafka': {
      const b = d!.kafka!;
      const sasl = b.sasl ? { mechanism: b.sasl.mechanism, username: b.sasl.username } : null;
      if (b.sasl) secrets.password = await readSecret(b.sasl.passwordSecretRef, 'kafka.sasl.passwordSecretRef');
      return {
        destination: { type: 'Kafka', bootstrapServers: b.bootstrapServers, topic: b.topic, tls: await tls(b.tls, 'kafka'), sasl },
        destinationSecrets: secrets,
        address: `kafka://${b.bootstrapServers.join(',')}/${b.topic}`,
      };
    }
    case 'RabbitMQ': {
      const b = d!.rabbitMQ!;
      together('rabbitMQ', b.username, b.passwordSecretRef);
      if (b.passwordSecretRef) secrets.password = await readSecret(b.passwordSecretRef, 'rabbitMQ.passwordSecretRef');
      const exchange = b.exchange ?? '';
      return {
        destination: {
          type: 'RabbitMQ',
          url: b.url,
          exchange,
          routingKey: b.routingKey ?? null,
          tls: await tls(b.tls, 'rabbitMQ'),
          username: b.username ?? null,
        },
        destinationSecrets: secrets,
        address: `${b.url} exchange ${JSON.stringify(exchange)}`,
      };
    }
    case 'NATS': {
      const b = d!.nats!;
      together('nats', b.username, b.passwordSecretRef);
      if (b.tokenSecretRef && b.username !== undefined) throw permanent('invalid_spec', 'nats: a tokenSecretRef or a username, not both');
      if (b.passwordSecretRef) secrets.password = await readSecret(b.passwordSecretRef, 'nats.passwordSecretRef');
      if (b.tokenSecretRef) secrets.token = await readSecret(b.tokenSecretRef, 'nats.tokenSecretRef');
      return {
        destination: { type: 'NATS', servers: b.servers, subject: b.subject, tls: await tls(b.tls, 'nats'), username: b.username ?? null },
        destinationSecrets: secrets,
        address: `${b.servers.join(',')}/${b.subject}`,
      };
    }
  }
}
