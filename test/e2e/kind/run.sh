#!/usr/bin/env bash
# End-to-end test of the image and the Helm chart on a kind cluster (needs a Docker engine;
# the CI of this repository has none and runs the offline chart checks of test/chart/ instead).
#
#   bash test/e2e/kind/run.sh            # create a cluster, test, delete the cluster
#   KEEP_CLUSTER=1 bash test/e2e/kind/run.sh   # keep it afterwards (kubectl --context kind-webhook-fanout-e2e)
#
# What it does:
#  1. creates the kind cluster "$KIND_CLUSTER" (reuses it when it exists)
#  2. builds the image from the Dockerfile and loads it into the cluster
#  3. builds (test/e2e/images/build.sh) and installs, in namespace "infra": Postgres, a Temporal
#     dev server (`temporal server start-dev`), the fauxqs SNS/SQS emulator and a receiver that
#     logs deliveries
#  4. creates namespace "webhook-fanout" enforcing the restricted Pod Security Standard, the
#     database Secret, and installs the chart (examples/values-in-cluster.yaml + values.yaml here):
#     the hook Jobs create the SNS/SQS topology and migrate the database, then every process starts
#  5. applies sample InboundCredential / WebhookEndpoint resources with kubectl and waits for Ready
#  6. runs `helm test` (an authenticated webhook to the ingest Service must answer 200)
#  7. sends a webhook through a port-forward to the ingest Service, expects 200 with an event id,
#     then finds that event in the receiver's logs with a valid HMAC signature; sends it again
#     and expects the duplicate answer; checks /metrics of the ingest
# On failure it prints pods, events and logs. Exit code 0 = passed.
#
# Tools: docker, kind (else built with `go install sigs.k8s.io/kind@$KIND_VERSION`), kubectl,
# helm (else .cache/tools/bin/helm from scripts/tools/install.sh), curl.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
HERE=$ROOT/test/e2e/kind

KIND_CLUSTER=${KIND_CLUSTER:-webhook-fanout-e2e}
KIND_VERSION=${KIND_VERSION:-v0.32.0}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-}
IMAGE=${IMAGE:-webhook-fanout:e2e}
NAMESPACE=webhook-fanout
RELEASE=webhook-fanout
LOCAL_PORT=${LOCAL_PORT:-18080}
CONTEXT=kind-$KIND_CLUSTER

log() { printf '\n==> %s\n' "$*" >&2; }
fail() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }

# ---- tools -----------------------------------------------------------------------------------
need() { command -v "$1" >/dev/null 2>&1 || fail "$1 is required: $2"; }
need docker "install Docker (kind runs Kubernetes nodes as containers)"
docker info >/dev/null 2>&1 || fail "no Docker engine answers (docker info failed): start Docker; CI here has none and runs test/chart instead"
need kubectl "install kubectl"
need curl "install curl"
export PATH="$ROOT/.cache/tools/bin:$PATH"
if ! command -v helm >/dev/null 2>&1; then
  bash "$ROOT/scripts/tools/install.sh"
fi
need helm "run bash scripts/tools/install.sh"
if ! command -v kind >/dev/null 2>&1; then
  GO=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$GO" ] || fail "kind is required: install it, or Go to build it (go install sigs.k8s.io/kind@$KIND_VERSION)"
  log "building kind $KIND_VERSION"
  GOBIN="$ROOT/.cache/tools/bin" "$GO" install "sigs.k8s.io/kind@$KIND_VERSION"
fi

k() { kubectl --context "$CONTEXT" "$@"; }

PF_PID=""
cleanup() {
  local rc=$?
  if [ -n "$PF_PID" ]; then kill "$PF_PID" 2>/dev/null || true; fi
  if [ $rc -ne 0 ]; then
    log "diagnostics"
    k get pods,jobs -A -o wide || true
    k get events -A --sort-by=.lastTimestamp | tail -40 || true
    k get inboundcredentials,webhookendpoints -n "$NAMESPACE" -o yaml || true
    for d in ingest consumer worker operator; do
      echo "--- logs $RELEASE-$d" >&2
      k logs -n "$NAMESPACE" "deploy/$RELEASE-$d" --all-containers --tail=80 || true
    done
    echo "--- logs receiver" >&2
    k logs -n infra deploy/receiver --tail=40 || true
  fi
  if [ "${KEEP_CLUSTER:-}" != "1" ]; then
    log "deleting kind cluster $KIND_CLUSTER (KEEP_CLUSTER=1 keeps it)"
    kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1 || true
  fi
  if [ $rc -eq 0 ]; then echo "PASSED: kind end-to-end" >&2; else echo "FAILED: kind end-to-end (exit $rc)" >&2; fi
  exit $rc
}
trap cleanup EXIT

# ---- 1. cluster ------------------------------------------------------------------------------
if grep -qx "$KIND_CLUSTER" <<<"$(kind get clusters 2>/dev/null)"; then
  log "reusing kind cluster $KIND_CLUSTER"
else
  log "creating kind cluster $KIND_CLUSTER"
  kind create cluster --name "$KIND_CLUSTER" --wait 180s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
fi

# ---- 2. image --------------------------------------------------------------------------------
log "building $IMAGE"
# the project's build script (as CI and skaffold build it), on the Docker engine kind runs on
CONTAINER_ENGINE=docker bash "$ROOT/scripts/image/build.sh" --pull \
  --build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  --build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -t "$IMAGE" "$ROOT"
log "smoke test of the image: read-only root filesystem, non-root, the CLI"
usage=$(docker run --rm --read-only --tmpfs /tmp --user 1000:1000 --cap-drop ALL "$IMAGE" --help) \
  || fail "the image does not run the CLI read-only as a non-root user"
grep -q 'webhook-fanout <command>' <<<"$usage" || fail "unexpected --help output: $usage"
kind load docker-image "$IMAGE" --name "$KIND_CLUSTER"

# ---- 3. dependencies -------------------------------------------------------------------------
log "building Postgres, Temporal and fauxqs images (test/e2e/images) and loading them"
bash "$ROOT/test/e2e/images/build.sh"
for img in $(bash "$ROOT/test/e2e/images/build.sh" --list); do
  kind load docker-image "$img" --name "$KIND_CLUSTER"
done
log "installing Postgres, Temporal, fauxqs and the receiver (namespace infra)"
k apply -f "$HERE/manifests/infra.yaml"
k apply -f "$HERE/manifests/receiver.yaml"
k -n infra set image deploy/receiver "receiver=$IMAGE"
for d in postgres temporal fauxqs receiver; do
  k -n infra rollout status "deploy/$d" --timeout=300s
done

# ---- 4. the chart ----------------------------------------------------------------------------
log "namespace $NAMESPACE (restricted Pod Security enforced) and the database Secret"
k apply -f "$HERE/manifests/app-namespace.yaml"

log "CRDs (server-side apply, as before every upgrade), then helm upgrade --install"
k apply --server-side --field-manager=webhook-fanout-crds -f "$ROOT/charts/webhook-fanout/crds/"
helm --kube-context "$CONTEXT" upgrade --install "$RELEASE" "$ROOT/charts/webhook-fanout" \
  --namespace "$NAMESPACE" \
  -f "$ROOT/charts/webhook-fanout/examples/values-in-cluster.yaml" \
  -f "$HERE/values.yaml" \
  --set "image.repository=${IMAGE%:*}" --set "image.tag=${IMAGE##*:}" \
  --wait --timeout 10m

# ---- 5. custom resources ---------------------------------------------------------------------
log "applying sample InboundCredential / WebhookEndpoint resources"
k -n "$NAMESPACE" apply -f "$HERE/manifests/samples.yaml"
k -n "$NAMESPACE" wait --for=condition=Ready --timeout=120s \
  inboundcredential/e2e inboundcredential/helm-test webhookendpoint/e2e-receiver

# ---- 6. helm test ----------------------------------------------------------------------------
log "helm test"
helm --kube-context "$CONTEXT" test "$RELEASE" --namespace "$NAMESPACE" --logs --timeout 5m

# ---- 7. a webhook end to end -----------------------------------------------------------------
log "port-forward to the ingest Service on localhost:$LOCAL_PORT"
k -n "$NAMESPACE" port-forward "svc/$RELEASE-ingest" "$LOCAL_PORT:80" >/dev/null 2>&1 &
PF_PID=$!
for _ in $(seq 1 50); do
  curl -s -o /dev/null "http://127.0.0.1:$LOCAL_PORT/" && break
  sleep 0.2
done

EXTERNAL_ID="e2e-$(date +%s)-$RANDOM"
BODY="{\"id\":\"$EXTERNAL_ID\",\"type\":\"order.created\",\"data\":{\"amount\":42}}"
send() {
  curl -sS -u e2e:e2e-password -H 'content-type: application/json' \
    -w '\n%{http_code}' -d "$BODY" "http://127.0.0.1:$LOCAL_PORT/api/webhooks/e2e"
}

log "POST /api/webhooks/e2e (event $EXTERNAL_ID)"
out=$(send)
status=${out##*$'\n'}
body=${out%$'\n'*}
echo "$status $body" >&2
[ "$status" = "200" ] || fail "expected 200 from the ingest, got $status: $body"
EVENT_ID=$(sed -n 's/.*"eventId":"\([0-9a-f-]\{36\}\)".*/\1/p' <<<"$body")
[ -n "$EVENT_ID" ] || fail "no eventId in $body"
grep -q '"duplicate":false' <<<"$body" || fail "expected duplicate:false in $body"

log "waiting for the delivery of $EVENT_ID at the receiver"
delivered=""
for _ in $(seq 1 90); do
  delivered=$(k -n infra logs deploy/receiver --tail=200 | grep "\"x-webhook-event-id\":\"$EVENT_ID\"" || true)
  [ -n "$delivered" ] && break
  sleep 1
done
[ -n "$delivered" ] || fail "event $EVENT_ID was not delivered to the receiver within 90 s"
echo "$delivered" >&2
grep -q '"signatureValid":true' <<<"$delivered" || fail "the delivery's X-Webhook-Signature is not the HMAC of the body"
grep -q '"x-webhook-source":"e2e"' <<<"$delivered" || fail "X-Webhook-Source missing"
grep -q '"x-webhook-event-type":"order.created"' <<<"$delivered" || fail "X-Webhook-Event-Type missing"
grep -q '"x-team":"e2e"' <<<"$delivered" || fail "the custom header X-Team missing"
grep -qF "${BODY//\"/\\\"}" <<<"$delivered" || fail "the body was not delivered byte for byte"

log "the same event again: duplicate"
out=$(send)
status=${out##*$'\n'}
body=${out%$'\n'*}
[ "$status" = "200" ] || fail "expected 200 for a duplicate, got $status: $body"
grep -q "\"eventId\":\"$EVENT_ID\"" <<<"$body" || fail "a duplicate must answer the original event id: $body"
grep -q '"duplicate":true' <<<"$body" || fail "expected duplicate:true: $body"

log "wrong password: 401 problem"
code=$(curl -s -o /dev/null -w '%{http_code}' -u e2e:wrong -H 'content-type: application/json' -d "$BODY" "http://127.0.0.1:$LOCAL_PORT/api/webhooks/e2e")
[ "$code" = "401" ] || fail "expected 401 for a wrong password, got $code"

log "metrics of the ingest"
pod=$(k -n "$NAMESPACE" get pods -l app.kubernetes.io/component=ingest -o jsonpath='{.items[0].metadata.name}')
metrics=$(k -n "$NAMESPACE" get --raw "/api/v1/namespaces/$NAMESPACE/pods/$pod:9090/proxy/metrics")
grep -q '^webhook_fanout_' <<<"$metrics" || fail "no webhook_fanout_ metric on the ingest's /metrics"

log "all checks passed"
