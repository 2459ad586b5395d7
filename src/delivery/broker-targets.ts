/**
 * Where a Kafka, RabbitMQ or NATS endpoint's messages go (docs/destinations.md): the endpoint
 * row's destination and its `secrets`, read from the Secrets of the endpoint's namespace only.
 * The same shapes as spec.destination's rows (dest's `DestinationOf<'Kafka'> & { secrets }`);
 * never logged or shown whole: spanTargetOf names the address only.
 */

/** A destination's credentials; never shown by the API or written to a log */
export interface BrokerSecrets {
  /** Kafka SASL, RabbitMQ, NATS user */
  password?: string;
  /** NATS token */
  token?: string;
  /** PEM of the CA bundle (tls.caBundleRef) */
  caBundle?: string;
}

/** TLS to a broker: on; with a CA bundle of its own (in `secrets.caBundle`) or the system's roots */
export interface BrokerTls {
  caBundle: boolean;
}

export interface KafkaTarget {
  type: 'Kafka';
  /** host:port of one or more brokers */
  bootstrapServers: string[];
  topic: string;
  tls: BrokerTls | null;
  /** the password is `secrets.password` */
  sasl: { mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string } | null;
  secrets: BrokerSecrets;
}

export interface RabbitMqTarget {
  type: 'RabbitMQ';
  /** amqp:// or amqps:// host, port and vhost, without credentials */
  url: string;
  /** '' is the default exchange (the routing key names the queue) */
  exchange: string;
  /** null: the ordering key when the endpoint is ordered, else the event's type */
  routingKey: string | null;
  tls: BrokerTls | null;
  /** the password is `secrets.password` */
  username: string | null;
  secrets: BrokerSecrets;
}

export interface NatsTarget {
  type: 'NATS';
  /** nats:// or tls:// URLs of one or more servers */
  servers: string[];
  /** published with JetStream: a stream must capture it */
  subject: string;
  tls: BrokerTls | null;
  /** the password is `secrets.password`; a token there instead (`secrets.token`) when no username */
  username: string | null;
  secrets: BrokerSecrets;
}
