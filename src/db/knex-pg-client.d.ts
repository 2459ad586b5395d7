// knex ships no types for its dialect modules; its Postgres client is a Knex.Client.
declare module 'knex/lib/dialects/postgres/index.js' {
  import type { Knex } from 'knex';

  const PgClient: typeof Knex.Client;
  export default PgClient;
}
