#!/usr/bin/env bash
# shellcheck disable=SC2329 # the brokers are functions called through the loop at the end, which ShellCheck does not follow
# Provisions, once, the message brokers the tests of the Kafka, RabbitMQ and NATS destinations
# start (test/support/kafka.ts, rabbitmq.ts, nats.ts), each as a process of its own on free ports:
#
#   brokers.sh kafka      Apache Kafka (KRaft) from Maven Central: org.apache.kafka:kafka_2.13 (the
#                         broker, kafka.Kafka, and its storage tool) and kafka-tools (the console
#                         consumer the tests read back with), with their dependencies, fetched by
#                         mvn into .cache/kafka/<version>/lib; run on the JVM. Needs java and mvn
#                         (apt-get installs them when missing, as root).
#   brokers.sh rabbitmq   Debian's rabbitmq-server (with its Erlang), apt-get install when missing.
#   brokers.sh nats       Debian's nats-server, apt-get install when missing.
#
# None is started here, nor as the system's service (Debian's policy may start the service on
# install; the tests never use it: each starts its own node on ports of its own).
# The background queue runs these (scripts/tools/builds.sh, groups kafka, rabbitmq, nats); a test
# runs them too before it starts a broker (a no-op when provisioned). Exits BUILD_NOOP_EXIT (0 by
# hand) when everything named was there already, 3 when it can not be had here (not root, no apt).
# apt-get runs under .cache/.apt.lock, as every apt-get of the project does (two at once fail on
# dpkg's lock).
set -euo pipefail
cd "$(dirname "$0")/../.."
KAFKA_VERSION=4.1.1
SLF4J_VERSION=1.7.36
noop=1

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi
}

apt_install() {
  command -v apt-get >/dev/null || { echo "brokers: $* not installed and no apt-get here: install them" >&2; exit 3; }
  mkdir -p .cache
  echo "brokers: apt-get install $*" >&2
  # an install first, with the lists there are; apt-get update only when that can not find them
  (
    flock 8
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "$@" >&2 \
      || { as_root apt-get update -q >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "$@" >&2; }
  ) 8>.cache/.apt.lock || { echo "brokers: apt-get install $* failed (root is needed)" >&2; exit 3; }
}

kafka() {
  local dir=.cache/kafka/$KAFKA_VERSION
  [ -f "$dir/.complete" ] && return 0
  noop=0
  if { ! command -v java >/dev/null || ! command -v mvn >/dev/null; }; then apt_install default-jre-headless maven; fi
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>kafka-deps</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>$SLF4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  echo "brokers: fetching org.apache.kafka:kafka_2.13:$KAFKA_VERSION and kafka-tools from Maven Central" >&2
  rm -rf "${dir:?}/lib"
  mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >&2
  touch "$dir/.complete"
}

rabbitmq() {
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] && return 0
  noop=0
  apt_install rabbitmq-server
}

nats() {
  command -v nats-server >/dev/null && return 0
  noop=0
  apt_install nats-server
}

[ $# -gt 0 ] || set -- kafka rabbitmq nats
# one at a time: the queue and test files starting together may all find a broker missing
mkdir -p .cache
exec 9>.cache/.brokers.lock
flock 9
for broker in "$@"; do
  case $broker in
    kafka | rabbitmq | nats) "$broker" ;;
    *) echo "brokers: unknown broker $broker (kafka, rabbitmq, nats)" >&2; exit 2 ;;
  esac
done
[ $noop = 1 ] && exit "${BUILD_NOOP_EXIT:-0}"
exit 0
