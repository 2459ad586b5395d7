#!/bin/sh
# Initialises $PGDATA on first start (user, password, database from the environment), then runs
# postgres in the foreground as the unprivileged "postgres" user. Listens on every address with
# password (scram) authentication; trust only over the local socket (pg_isready, probes).
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
POSTGRES_USER=${POSTGRES_USER:-postgres}
POSTGRES_DB=${POSTGRES_DB:-$POSTGRES_USER}
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  chown postgres "$pw"
  as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\";" | as_postgres postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "postgres-entrypoint: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*'
