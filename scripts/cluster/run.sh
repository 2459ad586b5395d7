#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, for as long as one command runs:
#
#   bash scripts/cluster/run.sh [command args...]   # default command: bash test/cluster/run.sh
#
# Brings up etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet on its own
# containerd (cgroupfs driver, runc), kube-proxy (iptables) and CoreDNS (a host process), runs the
# command with KUBECONFIG pointing at the cluster, then tears everything down -- on success,
# failure, Ctrl-C or SIGTERM: pods and sandboxes removed, processes stopped, mounts unmounted,
# iptables rules and the bridge removed, host sysctls the kubelet changed restored.
#
# Isolation: everything lives in .data/cluster/ (gitignored): its own containerd socket, root and
# state (a system containerd is left alone), non-default ports. Network: the bridge $BRIDGE with
# $NODE_IP/24 is the pod network (CNI bridge + host-local) and the only address the control plane
# listens on besides 127.0.0.1; services get $SERVICE_CIDR. Neither overlaps podman's 10.88.0.0/16;
# no masquerading and no DNS forwarding, so nothing leaves the machine.
#
# Needs root (containerd, mounts, iptables), Go (the binaries are built once into .cache/kube/bin by
# scripts/kube/build.sh and scripts/kube/build-node.sh), and Debian packages it installs when missing.
# Env: CLUSTER_DIR, CLUSTER_PORT_BASE (default 16000: apiserver +443, etcd +379/+380, kubelet +250),
# CLUSTER_KEEP_LOGS=1 (keep .data/cluster/logs after teardown, default kept on failure).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DIR=${CLUSTER_DIR:-$ROOT/.data/cluster}
BIN=$ROOT/.cache/kube/bin
PB=${CLUSTER_PORT_BASE:-16000}
BRIDGE=wfk8s0
NODE_IP=10.213.0.1
POD_CIDR=10.213.0.0/24
SERVICE_CIDR=10.214.0.0/24
NODE=wf-node
APISERVER_PORT=$((PB + 443))
ETCD_PORT=$((PB + 379))
ETCD_PEER_PORT=$((PB + 380))
KUBELET_PORT=$((PB + 250))
SOCK=$DIR/containerd/containerd.sock
PAUSE_IMAGE=localhost/webhook-fanout/pause:1

log() { printf '[cluster %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (containerd, mounts, iptables)"

# ---- host packages -------------------------------------------------------------------------
missing=()
for pair in containerd:containerd runc:runc iptables:iptables conntrack:conntrack podman:podman \
            openssl:openssl /usr/lib/cni/bridge:containernetworking-plugins findmnt:util-linux; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  if [ "${cmd#/}" != "$cmd" ]; then [ -x "$cmd" ] || missing+=("$pkg"); else command -v "$cmd" >/dev/null || missing+=("$pkg"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

# ---- binaries ------------------------------------------------------------------------------
t0=$(date +%s)
# helm and the binaries may still be building in the background queue .ci/run started
# (scripts/tools/builds.sh): wait for them; without a queue this returns at once
bash scripts/tools/builds.sh wait kube chart-tools node
bash scripts/kube/build.sh
bash scripts/kube/build-node.sh
KUBECTL=$(command -v kubectl || echo "$BIN/kubectl")
log "binaries ready after $(( $(date +%s) - t0 ))s"

# ---- teardown (registered before anything is started) --------------------------------------
PIDS=()      # name=pid, in start order
ADDED_BRIDGE=0
SYSCTLS_SAVED=""
STARTED_AT=$(date +%s)
stop_pid() { # name pid: SIGTERM, then SIGKILL after 10 s
  local name=$1 pid=$2
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  log "$name ($pid) ignored SIGTERM: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}
pid_of() { local e; for e in "${PIDS[@]}"; do [ "${e%%=*}" = "$1" ] && echo "${e#*=}"; done; return 0; }
ctr_() { ctr -a "$SOCK" -n k8s.io "$@"; }
teardown() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  local t
  t=$(date +%s)
  log "teardown (exit $rc)"
  # 1. pods away through the kubelet, so that CNI DEL runs for every sandbox (veths, IPs); the
  #    controllers stop first, or they would create replacements
  for c in kube-controller-manager kube-scheduler; do [ -n "$(pid_of $c)" ] && stop_pid $c "$(pid_of $c)"; done
  if [ -n "$(pid_of kubelet)" ] && [ -f "$DIR/admin.kubeconfig" ]; then
    timeout 60 "$KUBECTL" --kubeconfig "$DIR/admin.kubeconfig" delete pods --all -A --grace-period=1 --wait=true --timeout=50s >/dev/null 2>&1
    # the kubelet stops the sandboxes a moment after the API objects are gone
    for _ in $(seq 1 30); do
      [ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
      sleep 1
    done
  fi
  # 2. processes, in reverse start order
  local i
  for ((i=${#PIDS[@]}-1; i>=0; i--)); do
    stop_pid "${PIDS[$i]%%=*}" "${PIDS[$i]#*=}"
  done
  # 3. whatever containers survived: kill their tasks (the shims exit with them)
  if [ -f "$DIR/containerd/config.toml" ]; then
    containerd --config "$DIR/containerd/config.toml" >>"$DIR/logs/containerd-teardown.log" 2>&1 &
    local cpid=$!
    for _ in $(seq 1 50); do [ -S "$SOCK" ] && ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$c" >/dev/null 2>&1; done
    sleep 1
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$c" >/dev/null 2>&1; done
    for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers rm "$c" >/dev/null 2>&1; done
    stop_pid containerd-teardown "$cpid"
  fi
  # 4. network namespaces the CRI made for our sandboxes (cni-*, created after we started)
  for ns in /var/run/netns/cni-*; do
    [ -e "$ns" ] || continue
    [ "$(stat -c %Y "$ns")" -ge "$STARTED_AT" ] || continue
    grep -qxF "$ns" "$DIR/netns-before" 2>/dev/null && continue
    umount "$ns" 2>/dev/null; rm -f "$ns"
  done
  # 5. mounts below our folder (secret/emptyDir tmpfs, rootfs overlays, shm), deepest first
  findmnt -rn -o TARGET 2>/dev/null | grep -F "$DIR/" | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
  # 6. iptables: kube-proxy's chains (its own cleanup), then the bridge
  [ -x "$BIN/kube-proxy" ] && [ -f "$DIR/kube-proxy.yaml" ] && "$BIN/kube-proxy" --cleanup --config "$DIR/kube-proxy.yaml" >/dev/null 2>&1
  #    and the kubelet's own chains (it has no cleanup command), unless they were there before us
  for ipt in iptables ip6tables; do
    for tc in filter:KUBE-FIREWALL filter:KUBE-KUBELET-CANARY nat:KUBE-KUBELET-CANARY mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT; do
      local tb=${tc%%:*} ch=${tc#*:}
      grep -qx "$ipt $tb $ch" "$DIR/chains-before" 2>/dev/null && continue
      $ipt -t "$tb" -S 2>/dev/null | grep -E "^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j $ch\$" | sed 's/^-A/-D/' \
        | while read -r rule; do eval "$ipt -t $tb $rule"; done
      $ipt -t "$tb" -F "$ch" 2>/dev/null; $ipt -t "$tb" -X "$ch" 2>/dev/null
    done
  done
  [ $ADDED_BRIDGE = 1 ] && ip link del "$BRIDGE" 2>/dev/null
  for v in $(ip -o link show type veth 2>/dev/null | awk -F'[ :@]+' -v b="$BRIDGE" '$0 ~ "master "b {print $2}'); do ip link del "$v"; done
  # 7. host sysctls the kubelet sets (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops)
  for kv in $SYSCTLS_SAVED; do sysctl -qw "$kv" >/dev/null 2>&1; done
  # 8. our cgroup subtree
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h/webhook-fanout-cluster" ] && find "$h/webhook-fanout-cluster" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  if [ $rc != 0 ] || [ "${CLUSTER_KEEP_LOGS:-}" = 1 ]; then
    log "logs kept in $DIR/logs"
    rm -rf "$DIR/containerd/root" "$DIR/kubelet" 2>/dev/null
  else
    rm -rf "$DIR"
  fi
  log "teardown done in $(( $(date +%s) - t ))s"
  exit $rc
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- state folder --------------------------------------------------------------------------
if [ -d "$DIR" ]; then
  # a previous run that was SIGKILLed: unmount what it left, then start clean
  findmnt -rn -o TARGET | grep -F "$DIR/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done || true
  rm -rf "$DIR"
fi
mkdir -p "$DIR"/{pki,logs,etcd,containerd/root,containerd/state,cni/net.d,cni/ipam,kubelet,pod-logs}
ls -1d /var/run/netns/cni-* 2>/dev/null >"$DIR/netns-before" || true
for ipt in iptables ip6tables; do
  for tb in filter nat mangle; do
    $ipt -t $tb -S 2>/dev/null | sed -n "s/^-N \(KUBE-.*\)/$ipt $tb \1/p"
  done
done >"$DIR/chains-before"

# ---- network: the bridge is the node's address and the pods' gateway -----------------------
if ip link show "$BRIDGE" >/dev/null 2>&1; then die "$BRIDGE exists already (another cluster run?)"; fi
ip link add "$BRIDGE" type bridge
ADDED_BRIDGE=1
ip addr add "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
# the node's own connections to Service IPs (kubectl-free checks, curl) leave through the bridge
# with the node address, never towards the machine's default route
ip route add "$SERVICE_CIDR" dev "$BRIDGE" src "$NODE_IP"
# bridged pod-to-pod traffic through a Service IP must pass iptables (kube-proxy's DNAT)
[ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" = 1 ] || die "net.bridge.bridge-nf-call-iptables is not 1 (load br_netfilter)"
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ] || { SYSCTLS_SAVED="$SYSCTLS_SAVED net.ipv4.ip_forward=0"; sysctl -qw net.ipv4.ip_forward=1; }
for k in vm.overcommit_memory kernel.panic kernel.panic_on_oops; do SYSCTLS_SAVED="$SYSCTLS_SAVED $k=$(sysctl -n "$k")"; done

cat >"$DIR/cni/net.d/10-webhook-fanout.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "webhook-fanout-cluster",
  "plugins": [
    { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$DIR/cni/ipam",
                "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$NODE_IP" }]],
                "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "loopback" }
  ]
}
EOF

# ---- certificates: one CA for everything (as local-up-cluster.sh, fewer files) --------------
P=$DIR/pki
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=webhook-fanout-cluster-ca" \
  -keyout "$P/ca.key" -out "$P/ca.crt" 2>/dev/null
cert() { # name subject [san]
  local name=$1 subj=$2 san=${3:-}
  openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$P/$name.key" -out "$P/$name.csr" 2>/dev/null
  if [ -n "$san" ]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$P/$name.ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$P/$name.ext"
  fi
  openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
    -extfile "$P/$name.ext" -out "$P/$name.crt" 2>/dev/null
}
cert apiserver "/CN=kube-apiserver" "IP:$NODE_IP,IP:127.0.0.1,IP:${SERVICE_CIDR%.0/24}.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert admin "/O=system:masters/CN=admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kubelet "/O=system:nodes/CN=system:node:$NODE"
cert kube-proxy "/CN=system:kube-proxy"
cert coredns "/O=system:masters/CN=coredns"
openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
kubeconfig() { # name -> $DIR/name.kubeconfig
  cat >"$DIR/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: webhook-fanout-cluster
    cluster: {server: "https://$NODE_IP:$APISERVER_PORT", certificate-authority: "$P/ca.crt"}
users:
  - name: $1
    user: {client-certificate: "$P/$1.crt", client-key: "$P/$1.key"}
contexts:
  - name: webhook-fanout-cluster
    context: {cluster: webhook-fanout-cluster, user: $1}
current-context: webhook-fanout-cluster
EOF
}
for n in admin controller-manager scheduler kubelet kube-proxy coredns; do kubeconfig $n; done

start() { # name command args... (stdout/stderr to logs/name.log)
  local name=$1; shift
  "$@" >"$DIR/logs/$name.log" 2>&1 &
  PIDS+=("$name=$!")
}
wait_for() { # what seconds command...
  local what=$1 secs=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { tail -n 30 "$DIR"/logs/*.log >&2; die "$what not ready after ${secs}s"; }
    for e in "${PIDS[@]}"; do kill -0 "${e#*=}" 2>/dev/null || { tail -n 40 "$DIR/logs/${e%%=*}.log" >&2; die "${e%%=*} exited"; }; done
    sleep 0.5
  done
}
t_up=$(date +%s)
K=("$KUBECTL" --kubeconfig "$DIR/admin.kubeconfig")

# ---- control plane ---------------------------------------------------------------------------
start etcd "$BIN/etcd" --name wf --data-dir "$DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "wf=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "" --unsafe-no-fsync
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$APISERVER_PORT" \
  --service-cluster-ip-range "$SERVICE_CIDR" --service-node-port-range 30000-30999 \
  --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
  --client-ca-file "$P/ca.crt" \
  --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
  --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --authorization-mode Node,RBAC --allow-privileged=false \
  --kubelet-preferred-address-types InternalIP \
  --cert-dir "$DIR/pki/apiserver-generated" --profiling=false
wait_for kube-apiserver 90 "${K[@]}" get --raw /readyz
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig "$DIR/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port $((PB + 257)) --leader-elect=false \
  --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" \
  --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
  --use-service-account-credentials --service-cluster-ip-range "$SERVICE_CIDR" \
  --controllers '*,-cloud-node-lifecycle,-node-ipam-controller,-service-lb-controller,-node-route-controller'
start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig "$DIR/scheduler.kubeconfig" \
  --authentication-kubeconfig "$DIR/scheduler.kubeconfig" --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port $((PB + 259)) --leader-elect=false

# ---- containerd (own instance) and the sandbox image -----------------------------------------
cat >"$DIR/containerd/config.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  disable_apparmor = true
  # the kubelet asks for oom_score_adj -998 for sandboxes; lowering it needs CAP_SYS_RESOURCE, which
  # root lacks on these machines (runc: "failed to update /proc/self/oom_score_adj: Permission
  # denied"): clamp to containerd's own value instead
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
EOF
start containerd containerd --config "$DIR/containerd/config.toml"
wait_for containerd 30 ctr_ version

# pause: our own program (scripts/cluster/pause) in a FROM-scratch image, built with podman
if ! podman image exists "$PAUSE_IMAGE" || [ "$(podman image inspect -f '{{index .Labels "webhook-fanout.pause-sha"}}' "$PAUSE_IMAGE")" != "$(sha256sum "$BIN/pause" | cut -c1-16)" ]; then
  ctx=$(mktemp -d)
  cp "$BIN/pause" "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
  podman build -q --label "webhook-fanout.pause-sha=$(sha256sum "$BIN/pause" | cut -c1-16)" -t "$PAUSE_IMAGE" -f "$ctx/Containerfile" "$ctx" >/dev/null
  rm -rf "$ctx"
fi
# load_image <podman image, full name: localhost/x:t> [<name the cluster sees>]: podman save |
# ctr import. The archive carries exactly the name saved (not the image's other tags).
load_image() {
  local src=$1 as=${2:-$1}
  podman save "$src" | ctr_ images import --digests - >/dev/null
  [ "$src" = "$as" ] || ctr_ images tag --force "$src" "$as" >/dev/null
}
load_image "$PAUSE_IMAGE"

# ---- kubelet ---------------------------------------------------------------------------------
for h in /sys/fs/cgroup/*/; do [ -L "${h%/}" ] || mkdir -p "$h/webhook-fanout-cluster"; done
cat >"$DIR/resolv.conf" <<EOF
nameserver $NODE_IP
EOF
cat >"$DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((PB + 248))
cgroupDriver: cgroupfs
cgroupRoot: /webhook-fanout-cluster
containerRuntimeEndpoint: unix://$SOCK
failSwapOn: false
failCgroupV1: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
resolvConf: "$DIR/resolv.conf"
podCIDR: $POD_CIDR
podLogsDir: "$DIR/pod-logs"
serializeImagePulls: false
# a shared development machine: evict only when the disk is really full
evictionHard: {nodefs.available: "2%", imagefs.available: "2%", memory.available: "100Mi"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
start kubelet "$BIN/kubelet" --config "$DIR/kubelet.yaml" --kubeconfig "$DIR/kubelet.kubeconfig" \
  --root-dir "$DIR/kubelet" --cert-dir "$DIR/kubelet/pki" --hostname-override "$NODE" --node-ip "$NODE_IP"

# ---- kube-proxy (iptables) and CoreDNS (host process on the node address) --------------------
cat >"$DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$DIR/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:$((PB + 256))
metricsBindAddress: 127.0.0.1:$((PB + 249))
nodePortAddresses: ["$NODE_IP/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
start kube-proxy "$BIN/kube-proxy" --config "$DIR/kube-proxy.yaml"
cat >"$DIR/Corefile" <<EOF
.:53 {
  bind $NODE_IP
  errors
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $DIR/coredns.kubeconfig webhook-fanout-cluster
    pods insecure
    fallthrough in-addr.arpa ip6.arpa
  }
  # no forward: names outside the cluster do not resolve, nothing leaves the machine
}
EOF
start coredns "$BIN/coredns" -conf "$DIR/Corefile"

wait_for "node $NODE Ready" 120 "${K[@]}" wait --for=condition=Ready --timeout=1s "node/$NODE"
# the namespace "default" gets its ServiceAccount from the controller-manager shortly after
wait_for "ServiceAccount default/default" 60 "${K[@]}" get serviceaccount default
log "cluster up in $(( $(date +%s) - t_up ))s: KUBECONFIG=$DIR/admin.kubeconfig"

export KUBECONFIG=$DIR/admin.kubeconfig CLUSTER_DIR=$DIR CLUSTER_NODE_IP=$NODE_IP
export -f load_image ctr_
export SOCK
if [ $# = 0 ]; then set -- bash test/cluster/run.sh; fi
"$@"
