/**
 * Where a Kafka, RabbitMQ or NATS endpoint's messages go (docs/destinations.md): what the
 * destination needs to reach its broker, credentials already read from the Secrets of the
 * endpoint's namespace. Never logged or shown whole: spanTargetOf names the address only.
 */

/** SASL credentials (Kafka) */
export interface SaslCredentials {
  mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
  username: string;
  password: string;
}

/** TLS to a broker: on, with the CA bundle that signs its certificates (null: the system's roots) */
export interface BrokerTls {
  caBundle: string | null;
}

export interface KafkaTarget {
  type: 'Kafka';
  /** host:port of one or more brokers */
  bootstrapServers: readonly string[];
  topic: string;
  tls: BrokerTls | null;
  sasl: SaslCredentials | null;
}

export interface RabbitMqTarget {
  type: 'RabbitMQ';
  /** amqp:// or amqps:// host, port and vhost, without credentials */
  url: string;
  /** the exchange published to ("" is the default exchange, which routes to the queue named by the routing key) */
  exchange: string;
  /** the routing key of an unordered endpoint; an ordered one routes by its ordering key */
  routingKey: string;
  username: string | null;
  password: string | null;
  tls: BrokerTls | null;
}

export interface NatsTarget {
  type: 'NATS';
  /** nats:// or tls:// URLs of one or more servers */
  servers: readonly string[];
  /** the subject published to: a JetStream stream must take it */
  subject: string;
  username: string | null;
  password: string | null;
  /** a token instead of a user */
  token: string | null;
  tls: BrokerTls | null;
}
