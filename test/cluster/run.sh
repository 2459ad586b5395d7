#!/usr/bin/env bash
# The chart on a real cluster: run by `npm run test:cluster` inside scripts/cluster/run.sh (which
# brings the node up before and tears it down after; KUBECONFIG points at it).
#
#  1. images: the application (Dockerfile) and the dev services (test/e2e/images/*), built locally
#     with scripts/image/build.sh FROM the same base, loaded into the node's containerd
#     (CLUSTER_SKIP_BUILD=1: use the images already built; IMAGE_BUILD_SCRIPT: another build.sh)
#  2. test/e2e/kind/manifests (the same files the kind run applies): Postgres, Temporal dev server,
#     fauxqs, the recording receiver
#  3. helm install with examples/values-in-cluster.yaml: hook Jobs complete, Deployments Ready
#     through their probes, two operator replicas with one leader, samples Ready=True, helm test
#  4. a webhook end to end: accepted by the ingest Service, delivered to the receiver signed, then
#     replayed once by a WebhookReplay through the operator; two namespaces: an endpoint in another
#     namespace than its source's credential gets nothing until the credential allows it
#     (docs/tenancy.md)
#  5. operations: helm upgrade under load, worker and consumer pods deleted under load (no
#     webhook refused, no accepted event lost), a rotated Secret picked up without a restart, the
#     web console of the image in a real browser (Debian chromium) through a port-forward, a second
#     release of the same name in another namespace, helm uninstall leaves nothing behind
# Each check prints "ok - ..." or "not ok - ..."; the last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
HERE=$ROOT/test/e2e/kind
export PATH="$ROOT/.cache/tools/bin:$PATH"
NS=webhook-fanout
NS2=webhook-fanout-second
RELEASE=webhook-fanout
IMAGE=webhook-fanout:dev
CHART=$ROOT/charts/webhook-fanout
PASS=0
FAIL=0
FAILED=()
T0=$(date +%s)

log() { printf '[cluster-test %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
notok() { FAIL=$((FAIL + 1)); FAILED+=("$1"); echo "not ok - $1${2:+: $2}"; snapshot; }
# the processes' last minutes when a check fails: by the end (finish) the release may be uninstalled
snapshot() {
  local d
  for d in ingest consumer worker; do
    echo "--- logs $RELEASE-$d, the last 2 minutes at the failure" >&2
    k logs -n $NS -l "app.kubernetes.io/component=$d" --all-containers --prefix --since=2m --tail=40 2>&1 | tail -40 >&2
  done
}
check() { # name command...: passes when the command succeeds; the name gets the time it took
  local name=$1 start; start=$(date +%s); shift
  if "$@"; then ok "$name ($(( $(date +%s) - start ))s)"; else notok "$name ($(( $(date +%s) - start ))s)"; fi
}
phase() { log "phase $1 ($(( $(date +%s) - T0 ))s since start)"; }
k() { kubectl "$@"; }
finish() {
  if [ $FAIL -gt 0 ]; then
    log "diagnostics"
    k get pods,jobs -A -o wide 2>&1 | tail -40
    k get events -A --sort-by=.lastTimestamp 2>&1 | tail -30
    for d in ingest consumer worker operator; do
      echo "--- logs $RELEASE-$d" >&2
      k logs -n $NS "deploy/$RELEASE-$d" --all-containers --tail=30 2>&1 | tail -30 >&2
    done
    printf 'failed: %s\n' "${FAILED[@]}" >&2
  fi
  log "tests took $(( $(date +%s) - T0 ))s"
  echo "$PASS passed, $FAIL failed"
  [ $FAIL = 0 ]
}
trap 'kill $(jobs -p) 2>/dev/null; finish; exit $?' EXIT

# ---- 1. images -------------------------------------------------------------------------------
phase "1 images"
# what Kubernetes makes of a short name (docker.io/library/x:t, docker.io/org/x:t)
normalized() { case "$1" in */*) echo "docker.io/$1" ;; *) echo "docker.io/library/$1" ;; esac; }
t=$(date +%s)
if [ "${CLUSTER_SKIP_BUILD:-}" = 1 ]; then
  log "CLUSTER_SKIP_BUILD=1: using $IMAGE and the dev service images already built"
elif bash "${IMAGE_BUILD_SCRIPT:-scripts/image/build.sh}" -t "$IMAGE" >/tmp/cluster-image-app.log 2>&1 \
   && bash test/e2e/images/build.sh >/tmp/cluster-image-infra.log 2>&1; then
  ok "images built locally: $IMAGE and the dev services ($(( $(date +%s) - t ))s)"
else
  notok "images built locally" "see /tmp/cluster-image-*.log"; tail -20 /tmp/cluster-image-*.log >&2
  exit 1
fi
t=$(date +%s)
for img in "$IMAGE" $(bash test/e2e/images/build.sh --list); do
  load_image "localhost/$img" "$(normalized "$img")" || { notok "image $img loaded into the node"; exit 1; }
done
ok "images loaded into the node's containerd: podman save | ctr import ($(( $(date +%s) - t ))s)"

# ---- 2. dev services -------------------------------------------------------------------------
phase "2 dev services"
k apply -f "$HERE/manifests/infra.yaml" >/dev/null
k apply -f "$HERE/manifests/receiver.yaml" >/dev/null
k -n infra set image deploy/receiver "receiver=$IMAGE" >/dev/null
infra_ready() { local d; for d in postgres temporal fauxqs receiver; do k -n infra rollout status "deploy/$d" --timeout=240s >/dev/null || return 1; done; }
check "Postgres, Temporal, fauxqs and the receiver Ready in namespace infra" infra_ready

# ---- 3. the chart ----------------------------------------------------------------------------
phase "3 helm install"
# the dashboard ConfigMap and the PrometheusRule (and the ServiceMonitor) on, the prometheus-operator
# CRDs applied first (scripts/tools/install.sh fetches them from the operator's Go module)
HELM_ARGS=(-f "$CHART/examples/values-in-cluster.yaml" -f "$HERE/values.yaml"
  --set "image.tag=${IMAGE##*:}" --set operator.replicaCount=2
  --set metrics.serviceMonitor.enabled=true --set metrics.dashboards.enabled=true --set metrics.prometheusRule.enabled=true
  --set aws.credentials.existingSecret=webhook-fanout-aws
  --wait --timeout 6m)
k apply -f "$HERE/manifests/app-namespace.yaml" >/dev/null
k apply --server-side --field-manager=webhook-fanout-crds -f "$CHART/crds/" >/dev/null
k apply --server-side -f "$ROOT/.cache/tools/crds/monitoring.coreos.com_servicemonitors.yaml" \
  -f "$ROOT/.cache/tools/crds/monitoring.coreos.com_prometheusrules.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >/dev/null
t=$(date +%s)
check "helm install: the migration and transport hook Jobs complete, every Deployment Ready" \
  helm upgrade --install "$RELEASE" "$CHART" -n $NS "${HELM_ARGS[@]}"
migrations=$(k -n infra exec deploy/postgres -- psql -U webhook_fanout -d webhook_fanout -tAc 'select count(*) from knex_migrations' 2>/dev/null | tr -d '[:space:]')
check "the migration Job migrated the database (knex_migrations: ${migrations:-none})" test "${migrations:-0}" -gt 0
all_ready() {
  local d want have
  for d in ingest consumer worker operator; do
    want=$(k -n $NS get deploy "$RELEASE-$d" -o jsonpath='{.spec.replicas}')
    have=$(k -n $NS get deploy "$RELEASE-$d" -o jsonpath='{.status.readyReplicas}')
    [ -n "$want" ] && [ "$want" = "$have" ] || { echo "deploy/$RELEASE-$d: $have/$want ready" >&2; return 1; }
  done
}
check "every Deployment has all replicas Ready through its readiness probe" all_ready
monitoring_objects() {
  local rules dashboard monitor
  rules=$(k -n $NS get prometheusrule "$RELEASE" -o jsonpath='{range .spec.groups[*].rules[*]}{.alert}{"\n"}{end}') || return 1
  dashboard=$(k -n $NS get configmap "$RELEASE-dashboard-webhook-fanout" -o jsonpath='{.metadata.labels.grafana_dashboard}') || return 1
  monitor=$(k -n $NS get servicemonitor "$RELEASE" -o jsonpath='{.spec.endpoints[0].honorLabels}') || return 1
  echo "alerts: $(wc -l <<<"$rules"), dashboard label: $dashboard, ServiceMonitor honorLabels: $monitor" >&2
  [ "$(grep -c '^WebhookFanout' <<<"$rules")" -ge 13 ] && [ "$dashboard" = 1 ] && [ "$monitor" = true ]
}
check "the API server accepted the PrometheusRule (every alert), the dashboard ConfigMap and the ServiceMonitor" monitoring_objects
consumer_flags() {
  local cmdline
  cmdline=$(k -n $NS exec deploy/$RELEASE-consumer -- cat /proc/1/cmdline | tr '\0' ' ')
  echo "consumer's process: $cmdline" >&2
  grep -q -- "^node --optimize-for-size /app/dist/cmd/cli.js consumer" <<<"$cmdline"
}
check "the consumer runs as node --optimize-for-size /app/dist/cmd/cli.js (chart consumer.nodeFlags)" consumer_flags
leader_ok() {
  local holder pods
  holder=$(k -n $NS get lease "$RELEASE-operator" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)
  pods=$(k -n $NS get pods -l app.kubernetes.io/component=operator -o jsonpath='{.items[*].metadata.name}')
  [ "$(wc -w <<<"$pods")" = 2 ] || { echo "operator pods: $pods" >&2; return 1; }
  if [ -z "$holder" ] || ! grep -qw -- "${holder%%_*}" <<<"$pods"; then
    echo "lease holder '$holder' is not one of: $pods" >&2
    return 1
  fi
}
check "two operator replicas, one holds the leader Lease" leader_ok
k -n $NS apply -f "$HERE/manifests/samples.yaml" >/dev/null
check "the operator turns the sample InboundCredentials and WebhookEndpoint Ready=True" \
  k -n $NS wait --for=condition=Ready --timeout=120s inboundcredential/e2e inboundcredential/helm-test webhookendpoint/e2e-receiver
columns=$(k -n $NS get whe,ic 2>&1)
echo "$columns" >&2
columns_ok() {
  grep -qE "SOURCE.*URL.*STATE.*READY" <<<"$columns" \
    && grep -qE "SOURCE +VERIFICATION +USERNAME +READY" <<<"$columns" \
    && grep -qE "e2e-receiver +e2e .*http://receiver.infra.svc.cluster.local:8080/hooks/all +ACTIVE +True" <<<"$columns" \
    && grep -qE "helm-test +helm-test +Basic +helm-test +True" <<<"$columns"
}
check "kubectl get whe,ic shows source, URL, state, verification, readiness" columns_ok
# no --logs: the chart deletes the test Pod once it succeeded (hook-succeeded), before helm reads
# its logs; a failed one stays, and its logs are printed
helm_test() {
  helm test "$RELEASE" -n $NS --timeout 3m && return 0
  k -n $NS logs "pod/$RELEASE-test-webhook" >&2
  return 1
}
check "helm test: an authenticated webhook through the ingest Service is accepted" helm_test

# ---- 4. a webhook end to end (from the node, through the ingest Service's ClusterIP) ---------
phase "4 end to end"
INGEST=http://$(k -n $NS get svc "$RELEASE-ingest" -o jsonpath='{.spec.clusterIP}'):80
send() { # external-id [user:password] -> prints "<status> <body>"
  curl -sS -m 10 -u "${2:-e2e:e2e-password}" -H 'content-type: application/json' -w '\n%{http_code}' \
    -d "{\"id\":\"$1\",\"type\":\"order.created\",\"data\":{\"n\":\"$1\"}}" "$INGEST/api/webhooks/e2e" 2>&1 \
    | { body=$(cat); printf '%s %s\n' "${body##*$'\n'}" "${body%$'\n'*}"; }
}
receiver_log() { k -n infra logs deploy/receiver --tail=-1 2>/dev/null; }
ext="e2e-$(date +%s)-$RANDOM"
window_from=$(date -u -d '-5 seconds' +%Y-%m-%dT%H:%M:%SZ)
out=$(send "$ext")
event_id=$(sed -n 's/.*"eventId":"\([0-9a-f-]\{36\}\)".*/\1/p' <<<"$out")
check "POST /api/webhooks/e2e through the ingest Service: 200 with an event id ($out)" test -n "$event_id"
delivered() { # event-id: the receiver logged it with a valid signature and the custom header
  local line
  for _ in $(seq 1 60); do
    line=$(receiver_log | grep "\"x-webhook-event-id\":\"$1\"" | head -1)
    [ -n "$line" ] && break
    sleep 1
  done
  [ -n "$line" ] && grep -q '"signatureValid":true' <<<"$line" && grep -q '"x-team":"e2e"' <<<"$line" \
    && grep -q '"x-webhook-source":"e2e"' <<<"$line"
}
check "delivered to the in-cluster receiver, HMAC signature valid, X-Team and X-Webhook-Source headers" delivered "$event_id"
# a WebhookReplay of that delivery (SUCCESS) through the operator: Complete, the receiver gets it once more
window_to=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
sleep 3
# operational events (docs/operations-events.md): an endpoint of the namespace subscribing to the
# reserved source is told when that replay ends
k -n $NS apply -f - >/dev/null <<EOF
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: e2e-ops}
spec:
  source: webhook-fanout
  eventType: replay.completed
  url: http://receiver.infra.svc.cluster.local:8080/hooks/ops
EOF
k -n $NS wait --for=condition=Ready --timeout=60s webhookendpoint/e2e-ops >/dev/null || true
k -n $NS apply -f - >/dev/null <<EOF
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookReplay
metadata: {name: e2e-replay}
spec:
  endpointRef: {name: e2e-receiver}
  window: {from: "$window_from", to: "$window_to"}
  statuses: [SUCCESS]
EOF
replayed() {
  k -n $NS wait --for=condition=Complete --timeout=120s webhookreplay/e2e-replay >/dev/null || return 1
  local status n
  status=$(k -n $NS get webhookreplay e2e-replay -o jsonpath='{.status.matched} {.status.succeeded} {.status.failed}')
  echo "webhookreplay e2e-replay: matched succeeded failed = $status" >&2
  [ "$status" = "1 1 0" ] || return 1
  for _ in $(seq 1 30); do
    n=$(receiver_log | grep -c "\"x-webhook-event-id\":\"$1\"")
    [ "$n" = 2 ] && return 0
    sleep 1
  done
  return 1
}
check "a WebhookReplay of that delivery: Complete with 1 matched, 1 succeeded; the receiver got the event a second time" replayed "$event_id"
ops_told() { # the replay's replay.completed reached the endpoint of the reserved source
  for _ in $(seq 1 60); do
    receiver_log | grep '"path":"/hooks/ops"' | grep -q '"x-webhook-event-type":"replay.completed"' && return 0
    sleep 1
  done
  return 1
}
check "an endpoint subscribing to source webhook-fanout in the namespace receives the replay's replay.completed" ops_told
# ordered delivery per key (docs/ordering.md): the receiver answers 503 to the first attempt of
# an event marked "retry", so key a's first event is retried after a backoff; the key's next events
# wait for it and arrive after it, in the order they were accepted, while key b's go on meanwhile
k -n $NS apply -f - >/dev/null <<EOF
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: e2e-ordered}
spec:
  source: e2e
  eventType: order.sequenced
  url: http://receiver.infra.svc.cluster.local:8080/hooks/ordered
  ordering: {key: "event.data.data.k"}
EOF
k -n $NS wait --for=condition=Ready --timeout=60s webhookendpoint/e2e-ordered >/dev/null || true
ORDER_RUN="o$RANDOM"
send_sequenced() { # key n retry -> the HTTP status
  curl -sS -m 10 -o /dev/null -w '%{http_code}' -u e2e:e2e-password -H 'content-type: application/json' \
    -d "{\"id\":\"$ORDER_RUN-$1-$2\",\"type\":\"order.sequenced\",\"data\":{\"k\":\"$1\",\"n\":$2,\"run\":\"$ORDER_RUN\",\"retry\":$3}}" \
    "$INGEST/api/webhooks/e2e"
}
received_sequenced() { # the key and n of each request of this run the receiver answered 200, in arrival order
  receiver_log | python3 -c '
import json, sys
for line in sys.stdin:
    try: r = json.loads(line)
    except ValueError: continue
    if r.get("path") != "/hooks/ordered" or r.get("refused"): continue
    d = json.loads(r["body"]).get("data", {})
    if d.get("run") == sys.argv[1]: print("%s%s" % (d["k"], d["n"]), end=" ")
' "$ORDER_RUN"
}
ordered_per_key() {
  local i codes got a b
  codes=$(send_sequenced a 1 true)
  for i in 2 3 4 5; do codes+=$(send_sequenced a $i false)$(send_sequenced b $i false); done
  [ "$codes" = "200200200200200200200200200" ] || { echo "ingest answered $codes" >&2; return 1; }
  for _ in $(seq 1 90); do
    got=$(received_sequenced)
    [ "$(wc -w <<<"$got")" -ge 9 ] && break
    sleep 1
  done
  echo "received in this order: $got" >&2
  a=$(tr ' ' '\n' <<<"$got" | grep '^a' | tr '\n' ' ')
  b=$(tr ' ' '\n' <<<"$got" | grep '^b' | tr '\n' ' ')
  # key a in order behind its first event's retry (the receiver did refuse it once); key b whole and in order
  # (grep -c, not -q: -q's early exit would fail the pipeline with SIGPIPE under pipefail)
  [ "$a" = "a1 a2 a3 a4 a5 " ] && [ "$b" = "b2 b3 b4 b5 " ] \
    && [ "$(receiver_log | grep '"path":"/hooks/ordered"' | grep -c '"refused":true')" -ge 1 ]
}
check "an ordered endpoint (spec.ordering.key): key a's events arrive in order behind its first event's retry (503 once), key b's whole and in order" ordered_per_key
# a destination beyond HTTP (docs/destinations.md): an endpoint of type SQS publishing to a queue of
# the in-cluster emulator with the worker's AWS keys (aws.credentials.existingSecret), the message
# read back with boto3 (moto's virtualenv, provisioned by scripts/provision.sh)
FAUXQS=http://$(k -n infra get svc fauxqs -o jsonpath='{.spec.clusterIP}'):4566
BOTO_PY=$ROOT/.cache/pytools/moto-venv/bin/python
[ -x "$BOTO_PY" ] || bash "$ROOT/scripts/provision.sh" >&2
sqs_py() { # python code using `sqs` (a boto3 SQS client on the emulator) and argv
  "$BOTO_PY" -c "import boto3, json, sys, time
sqs = boto3.client('sqs', endpoint_url='$FAUXQS', region_name='us-east-1', aws_access_key_id='test', aws_secret_access_key='test')
$1" "${@:2}"
}
sqs_py "sqs.create_queue(QueueName='e2e-destination')" >/dev/null 2>&1
k -n $NS apply -f - >/dev/null <<EOF
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: e2e-to-sqs}
spec:
  source: e2e
  eventType: order.queued
  destination:
    type: SQS
    sqs:
      queueUrl: http://fauxqs.infra.svc.cluster.local:4566/000000000000/e2e-destination
      region: us-east-1
      endpointUrl: http://fauxqs.infra.svc.cluster.local:4566
EOF
k -n $NS wait --for=condition=Ready --timeout=60s webhookendpoint/e2e-to-sqs >/dev/null || true
published_to_sqs() {
  local ext code
  ext="sqs-$RANDOM-$(date +%s)"
  code=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' -u e2e:e2e-password -H 'content-type: application/json' \
    -d "{\"id\":\"$ext\",\"type\":\"order.queued\",\"data\":{\"n\":1}}" "$INGEST/api/webhooks/e2e")
  [ "$code" = 200 ] || { echo "ingest answered $code" >&2; return 1; }
  # the message whose body is the event's payload, within 90 s
  sqs_py '
url = sqs.get_queue_url(QueueName="e2e-destination")["QueueUrl"]
deadline = time.time() + 90
while time.time() < deadline:
    for m in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get("Messages", []):
        if json.loads(m["Body"]).get("id") == sys.argv[1]:
            print("received from SQS: %s, attributes %s" % (m["Body"], sorted(m.get("MessageAttributes", {}))), file=sys.stderr)
            sys.exit(0)
sys.exit(1)' "$ext"
}
check "an SQS destination (spec.destination.type: SQS): the event's payload is published to the queue, read back with boto3" published_to_sqs
WORK_MTLS=$(mktemp -d)
# an endpoint that demands a client certificate (docs/endpoints-tls.md): a receiver in infra that
# accepts only TLS clients whose certificate its private CA issued; the endpoint's client
# certificate (a kubernetes.io/tls Secret) and CA bundle (a Secret) in the endpoint's namespace
MTLS=$WORK_MTLS
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=e2e-private-ca -keyout "$MTLS/ca.key" -out "$MTLS/ca.crt" 2>/dev/null
cert_from_ca() { # name subject [subjectAltName] [extendedKeyUsage]
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$MTLS/$1.key" -out "$MTLS/$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "${3:-DNS:$1}" "${4:-clientAuth}" >"$MTLS/$1.ext"
  openssl x509 -req -in "$MTLS/$1.csr" -CA "$MTLS/ca.crt" -CAkey "$MTLS/ca.key" -CAcreateserial -days 2 \
    -extfile "$MTLS/$1.ext" -out "$MTLS/$1.crt" 2>/dev/null
}
cert_from_ca server /CN=receiver-mtls DNS:receiver-mtls.infra.svc.cluster.local serverAuth
cert_from_ca client /CN=webhook-fanout-e2e
k -n infra create secret generic receiver-mtls --from-file=tls.crt="$MTLS/server.crt" \
  --from-file=tls.key="$MTLS/server.key" --from-file=ca.crt="$MTLS/ca.crt" >/dev/null
k -n $NS create secret tls e2e-client-cert --cert="$MTLS/client.crt" --key="$MTLS/client.key" >/dev/null
k -n $NS create secret generic e2e-private-ca --from-file=ca.crt="$MTLS/ca.crt" >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: receiver-mtls, namespace: infra}
data:
  receiver.mjs: |
    import https from 'node:https';
    import { readFileSync } from 'node:fs';
    const f = (n) => readFileSync('/tls/' + n);
    https.createServer({ key: f('tls.key'), cert: f('tls.crt'), ca: f('ca.crt'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const peer = req.socket.getPeerCertificate();
        console.log(JSON.stringify({ path: req.url, client: peer.subject?.CN, authorized: req.socket.authorized, eventId: req.headers['x-webhook-event-id'], body: Buffer.concat(chunks).toString('utf8') }));
        res.writeHead(200).end('ok');
      });
    }).on('tlsClientError', (e) => console.log(JSON.stringify({ tlsClientError: e.message }))).listen(8443);
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: receiver-mtls, namespace: infra, labels: {app: receiver-mtls}}
spec:
  replicas: 1
  selector: {matchLabels: {app: receiver-mtls}}
  template:
    metadata: {labels: {app: receiver-mtls}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: receiver
          image: $IMAGE
          imagePullPolicy: IfNotPresent
          command: ["node", "/receiver/receiver.mjs"]
          ports: [{name: https, containerPort: 8443}]
          readinessProbe: {tcpSocket: {port: https}, periodSeconds: 2}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts: [{name: receiver, mountPath: /receiver}, {name: tls, mountPath: /tls}]
      volumes:
        - {name: receiver, configMap: {name: receiver-mtls}}
        - {name: tls, secret: {secretName: receiver-mtls}}
---
apiVersion: v1
kind: Service
metadata: {name: receiver-mtls, namespace: infra}
spec:
  selector: {app: receiver-mtls}
  ports: [{name: https, port: 8443, targetPort: https}]
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: e2e-mtls, namespace: $NS}
spec:
  source: e2e
  eventType: order.mtls
  url: https://receiver-mtls.infra.svc.cluster.local:8443/hooks/mtls
  tls:
    clientCertificateSecretRef: {name: e2e-client-cert}
    caBundleRef: {kind: Secret, name: e2e-private-ca, key: ca.crt}
EOF
delivered_with_client_cert() {
  k -n infra rollout status deploy/receiver-mtls --timeout=120s >/dev/null || return 1
  k -n $NS wait --for=condition=Ready --timeout=60s webhookendpoint/e2e-mtls >/dev/null || return 1
  local ext out id line
  ext="mtls-$RANDOM-$(date +%s)"
  out=$(curl -sS -m 10 -u e2e:e2e-password -H 'content-type: application/json' \
    -d "{\"id\":\"$ext\",\"type\":\"order.mtls\"}" "$INGEST/api/webhooks/e2e")
  id=$(sed -n 's/.*"eventId":"\([0-9a-f-]\{36\}\)".*/\1/p' <<<"$out")
  [ -n "$id" ] || { echo "ingest answered $out" >&2; return 1; }
  for _ in $(seq 1 60); do
    line=$(k -n infra logs deploy/receiver-mtls --tail=-1 2>/dev/null | grep "\"eventId\":\"$id\"" | head -1)
    [ -n "$line" ] && break
    sleep 1
  done
  echo "mTLS receiver: ${line:-nothing for $id}" >&2
  grep -q '"client":"webhook-fanout-e2e","authorized":true' <<<"$line"
}
check "an endpoint with a client certificate and a private CA from Secrets (spec.tls): delivered to a receiver that accepts only that CA's clients" delivered_with_client_cert
rm -rf "$WORK_MTLS"

# ---- 4b. namespaces as tenants (docs/tenancy.md) ----------------------------------------------
phase "4b two namespaces"
k apply -f "$HERE/manifests/tenancy.yaml" >/dev/null
reason_of() { k -n "$1" get whe "$2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}' 2>/dev/null; }
reason_is() { # namespace name reason: within 60 s
  for _ in $(seq 1 60); do [ "$(reason_of "$1" "$2")" = "$3" ] && return 0; sleep 1; done
  echo "$1/$2: $(reason_of "$1" "$2")" >&2; return 1
}
check "the endpoint in the credential's namespace is Ready, the one in tenant-orders NotAllowedBySource (Same by default)" \
  eval 'reason_is tenant-pay own Synced && reason_is tenant-orders other NotAllowedBySource'
tenant_send() { # external-id -> event id
  curl -sS -m 10 -u pay:pay-password -H 'content-type: application/json' -d "{\"id\":\"$1\",\"type\":\"t\"}" \
    "$INGEST/api/webhooks/tenant-pay" | sed -n 's/.*"eventId":"\([0-9a-f-]\{36\}\)".*/\1/p'
}
at() { # event-id path: the receiver got the event at that path
  receiver_log | grep "\"x-webhook-event-id\":\"$1\"" | grep -q "\"path\":\"$2\""
}
routed_to_own_only() { # the event reaches tenant-pay's endpoint and, 10 s later, still not tenant-orders'
  local id=""
  for _ in $(seq 1 15); do id=$(tenant_send "tenant-$(date +%s%N)"); [ -n "$id" ] && break; sleep 1; done
  [ -n "$id" ] || return 1
  for _ in $(seq 1 60); do at "$id" /hooks/tenant-pay && break; sleep 1; done
  at "$id" /hooks/tenant-pay || return 1
  sleep 10
  ! at "$id" /hooks/tenant-orders
}
check "a webhook of the source reaches tenant-pay's endpoint only" routed_to_own_only
k -n tenant-pay patch ic pay --type=merge -p '{"spec":{"allowedEndpoints":{"namespaces":{"from":"All"}}}}' >/dev/null
check "from: All: tenant-orders' endpoint becomes Ready" reason_is tenant-orders other Synced
routed_to_both() {
  local id; id=$(tenant_send "tenant-all-$(date +%s%N)")
  [ -n "$id" ] || return 1
  for _ in $(seq 1 60); do at "$id" /hooks/tenant-pay && at "$id" /hooks/tenant-orders && return 0; sleep 1; done
  return 1
}
check "... and receives the source's next webhook beside tenant-pay's" routed_to_both
# the resources go while the operator runs (their finalizers need it), then their namespaces
k delete -f "$HERE/manifests/tenancy.yaml" --wait=true --timeout=120s >/dev/null 2>&1

# ---- 5. operations ---------------------------------------------------------------------------
# load <file> <prefix>: sends webhooks one after another until $file.stop exists; appends the
# event id of every accepted (200) one to $file, counts other answers in $file.rejected
load() {
  local file=$1 prefix=$2 i=0 out id
  : >"$file"; : >"$file.rejected"
  while [ ! -e "$file.stop" ]; do
    i=$((i + 1))
    out=$(send "$prefix-$i")
    id=$(sed -n 's/^200 .*"eventId":"\([0-9a-f-]\{36\}\)".*/\1/p' <<<"$out")
    if [ -n "$id" ]; then echo "$id" >>"$file"; else echo "$out" >>"$file.rejected"; fi
    sleep 0.05
  done
}
# none_lost <file>: no webhook was refused (any answer but 200, or no answer), and every accepted
# event of the file reaches the receiver within 180 s
none_lost() {
  local file=$1 missing total
  total=$(wc -l <"$file")
  for _ in $(seq 1 90); do
    missing=$(receiver_log | grep -o '"x-webhook-event-id":"[0-9a-f-]*"' | cut -d'"' -f4 | sort -u | comm -13 - <(sort -u "$file") | wc -l)
    [ "$missing" = 0 ] && break
    sleep 2
  done
  echo "accepted $total, not delivered $missing, refused or failed $(wc -l <"$file.rejected")" >&2
  sort "$file.rejected" | uniq -c | head -5 >&2
  [ "$total" -gt 0 ] && [ "$missing" = 0 ] && [ ! -s "$file.rejected" ]
}
WORK=$(mktemp -d)
phase "5a helm upgrade under load"
load "$WORK/upgrade" "upgrade-$RANDOM" & LOAD=$!
sleep 3
t=$(date +%s)
check "helm upgrade with a changed value (logLevel=info) under load" \
  helm upgrade "$RELEASE" "$CHART" -n $NS "${HELM_ARGS[@]}" --set logLevel=info
# (the filter in a variable: bash misreads "?(" inside $(...) as an extglob)
jp='{.spec.template.spec.containers[0].env[?(@.name=="LOG_LEVEL")].value}'
upgraded=$(k -n $NS get deploy "$RELEASE-worker" -o "jsonpath=$jp")
check "the upgrade rolled the pods with the changed value (worker LOG_LEVEL=$upgraded)" test "$upgraded" = info
sleep 3; touch "$WORK/upgrade.stop"; wait $LOAD
check "helm upgrade under load: no webhook refused, no accepted event lost" none_lost "$WORK/upgrade"

phase "5b pods deleted under load"
load "$WORK/delete" "delete-$RANDOM" & LOAD=$!
sleep 3
k -n $NS delete pod -l app.kubernetes.io/component=worker --wait=false >/dev/null
sleep 3
k -n $NS delete pod -l app.kubernetes.io/component=consumer --wait=false >/dev/null
k -n $NS rollout status deploy/$RELEASE-worker --timeout=120s >/dev/null
k -n $NS rollout status deploy/$RELEASE-consumer --timeout=120s >/dev/null
sleep 3; touch "$WORK/delete.stop"; wait $LOAD
check "worker and consumer pods deleted under load: no webhook refused, no accepted event lost" none_lost "$WORK/delete"

phase "5c rotated Secret"
restarts_before=$(k -n $NS get pods -l app.kubernetes.io/component=ingest -o jsonpath='{range .items[*]}{.metadata.uid}:{.status.containerStatuses[0].restartCount} {end}')
k -n $NS create secret generic e2e-inbound --from-literal=password=rotated-password --dry-run=client -o yaml | k apply -f - >/dev/null
rotated() {
  for _ in $(seq 1 60); do
    [[ "$(send "rot-$RANDOM" e2e:rotated-password)" == 200* ]] && [[ "$(send "rot-$RANDOM" e2e:e2e-password)" == 401* ]] && return 0
    sleep 1
  done
  return 1
}
check "a rotated inbound password Secret: the new one accepted, the old one refused" rotated
restarts_after=$(k -n $NS get pods -l app.kubernetes.io/component=ingest -o jsonpath='{range .items[*]}{.metadata.uid}:{.status.containerStatuses[0].restartCount} {end}')
check "... without restarting the ingest pods" test "$restarts_before" = "$restarts_after"

phase "5d the console of the image, in a browser, through a port-forward"
# dev mode's identity provider on an address of the node: the ingest pods fetch its key set there,
# the browser (on this machine) logs in there; the release gets the admin API and the console
jp_ip='{.items[0].status.addresses[?(@.type=="InternalIP")].address}'
NODE_IP=$(k get nodes -o "jsonpath=$jp_ip")
CONSOLE_PORT=$("$ROOT/node_modules/.bin/node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
CONSOLE="http://127.0.0.1:$CONSOLE_PORT"
"$ROOT/node_modules/.bin/tsx" test/cluster/console-check.ts idp "$NODE_IP" "$CONSOLE" "http://localhost:$CONSOLE_PORT" >"$WORK/idp.out" 2>&1 & IDP=$!
for _ in $(seq 1 30); do grep -q '^http' "$WORK/idp.out" && break; sleep 1; done
AUTH_URL=$(grep -m1 '^http' "$WORK/idp.out")
check "helm upgrade with the admin API and the console (identity provider $AUTH_URL)" \
  helm upgrade "$RELEASE" "$CHART" -n $NS "${HELM_ARGS[@]}" --set adminApi.enabled=true --set "adminApi.auth.url=$AUTH_URL" \
    --set adminApi.auth.audience=https://webhook-fanout.cluster.test/api --set console.clientId=webhook-fanout-console
k -n $NS port-forward "svc/$RELEASE-ingest" "$CONSOLE_PORT:80" >"$WORK/port-forward.out" 2>&1 & PF=$!
served() { for _ in $(seq 1 30); do curl -sf -m 5 "$CONSOLE/console/config.json" >/dev/null && return 0; sleep 1; done; return 1; }
check "the console's config.json through kubectl port-forward" served
check "the console from the image: signed in at the login page, the event of phase 4 shown, no dialog, no CSP violation, no token in a URL" \
  "$ROOT/node_modules/.bin/tsx" test/cluster/console-check.ts browser "$CONSOLE" "$event_id"
csp_reports() { # the ingest's own count of CSP reports, from inside its pod
  k -n $NS exec "deploy/$RELEASE-ingest" -- node -e \
    'fetch("http://127.0.0.1:9090/metrics").then((r) => r.text()).then((t) => process.stdout.write(t))' \
    | grep '^webhook_fanout_console_csp_violations_total' | awk '{ s += $2 } END { print s + 0 }'
}
reports=$(csp_reports)
check "no CSP violation reported to the ingest (webhook_fanout_console_csp_violations_total: ${reports:-unread})" test "${reports:-x}" = 0
kill $PF $IDP 2>/dev/null; wait $PF $IDP 2>/dev/null

phase "5d same release name in a second namespace"
k create namespace $NS2 >/dev/null
k -n $NS2 create secret generic webhook-fanout-database \
  --from-literal=DATABASE_URL="$(k -n $NS get secret webhook-fanout-database -o jsonpath='{.data.DATABASE_URL}' | base64 -d)" >/dev/null
check "the same release name installs in a second namespace" \
  helm install "$RELEASE" "$CHART" -n $NS2 "${HELM_ARGS[@]}" --set operator.replicaCount=1 --set aws.credentials.existingSecret=

phase "5e helm uninstall"
# the cluster-scoped objects of both releases, by name: each release has its own
cluster_objs() { k get clusterrole,clusterrolebinding -o name | grep -E "/($NS|$NS2)-$RELEASE-" ; }
before=$(cluster_objs)
echo "$before" >&2
check "both releases have their own ClusterRoles and ClusterRoleBinding" \
  test "$(grep -c "/$NS-$RELEASE-" <<<"$before")" -ge 2 -a "$(grep -c "/$NS2-$RELEASE-" <<<"$before")" -ge 2
leftovers() { # namespace: what of the release is still there ("kubectl failed" when it can not tell)
  local objs
  objs=$(k -n "$1" get all,sa,role,rolebinding,secret,configmap,pdb,networkpolicy,ingress -o name) || { echo "kubectl failed"; return; }
  grep -vE '^(serviceaccount/default|configmap/kube-root-ca.crt|secret/webhook-fanout-database|secret/webhook-fanout-aws|secret/e2e-.*|secret/helm-test-credentials)$' <<<"$objs"
}
uninstalled() {
  helm uninstall "$RELEASE" -n "$1" --wait --timeout 3m >/dev/null || return 1
  local left
  for _ in $(seq 1 30); do
    left=$(leftovers "$1" | grep -v '^pod/' ; k -n "$1" get pods -o name -l "app.kubernetes.io/instance=$RELEASE")
    [ -z "$left" ] && return 0
    sleep 2
  done
  echo "left behind in $1: $left" >&2
  return 1
}
# the custom resources go first: their finalizers need the operator
k -n $NS delete -f "$HERE/manifests/samples.yaml" --wait=true --timeout=60s >/dev/null 2>&1
k -n $NS delete webhookreplay e2e-replay --ignore-not-found >/dev/null 2>&1
check "helm uninstall leaves nothing of the release in the second namespace" uninstalled $NS2
check "helm uninstall leaves nothing of the release in $NS (no hook ServiceAccounts, no cluster roles)" uninstalled $NS
left_cluster=$(cluster_objs || true)
check "no ClusterRole or ClusterRoleBinding of either release left (${left_cluster:-none})" test -z "$left_cluster"
rm -rf "$WORK"
