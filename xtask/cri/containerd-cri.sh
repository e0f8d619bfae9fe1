#!/usr/bin/env bash
# containerd-cri.sh - a containerd with its CRI plugin for maibox's CRI lane (`cargo xtask
# test-cri`, part of `cargo xtask test` as root): the Kubernetes node path without a cluster.
# maibox is registered as the runtime handler `maibox` (what a RuntimeClass names), beside
# `runc`; the lane's tests (xtask/cri/tests) drive it over the CRI socket.
#
#   containerd-cri.sh up      install containerd + busybox-static if missing, start containerd,
#                             build and import the pause and test images
#   containerd-cri.sh down    remove what the lane left, stop the containerd that "up" started
#   containerd-cri.sh status
#
# This containerd is apart from any other: its own socket, state and root directories (below),
# so neither Docker's containerd nor a system one is touched, nor do they see its containers.
# No registry is reached: the pause image is a static binary built here from pause.rs, the
# test image Debian's busybox-static; both are imported with `ctr`. No CNI plugin is set up,
# so pods use the node's network (NamespaceMode NODE); the host's interfaces are left alone.
#
# Environment:
#   MAIBOX     the maibox binary to register as handler `maibox` (required for up)
#   LANE_DIR   socket, state, pid file and log (default /run/maibox-cri)
#   LANE_ROOT  content store and snapshots (default /var/lib/maibox-cri)
set -euo pipefail

LANE_DIR=${LANE_DIR:-/run/maibox-cri}
LANE_ROOT=${LANE_ROOT:-/var/lib/maibox-cri}
SOCK=$LANE_DIR/containerd.sock
PIDFILE=$LANE_DIR/containerd.pid
LOG=$LANE_DIR/containerd.log
CONFIG=$LANE_DIR/config.toml
PAUSE_IMAGE=localhost/maibox/pause:lane
TEST_IMAGE=localhost/maibox/busybox:lane
HERE=$(cd "$(dirname "$0")" && pwd)
CLEANUP=()
trap 'rm -rf "${CLEANUP[@]}"' EXIT

ctr_() { ctr --address "$SOCK" -n k8s.io "$@"; }

our_pid() { # PID of the containerd we started, if it is still that process
  local pid; pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = containerd ] && echo "$pid"
}

install_packages() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  [ -x /bin/busybox ] || need+=(busybox-static)
  [ ${#need[@]} -eq 0 ] && return
  echo "installing ${need[*]}"
  if [ ! -e /usr/sbin/policy-rc.d ]; then  # keep package scripts from starting a system containerd
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    CLEANUP+=(/usr/sbin/policy-rc.d)
  fi
  # Other lanes may be installing packages at the same time: wait for dpkg's
  # lock instead of failing on it.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get -o DPkg::Lock::Timeout=600 \
    install -y -qq --no-install-recommends --no-remove "${need[@]}" >/dev/null
}

write_config() { # prints "changed" if the config was rewritten
  local new
  new=$(cat <<EOF
version = 2
root = "$LANE_ROOT"
state = "$LANE_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$LANE_ROOT/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  # Machines without CAP_SYS_RESOURCE (this workplace's) cannot lower an oom_score_adj,
  # which a pod sandbox asks for (-998): keep no value below containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    conf_dir = "$LANE_DIR/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$LANE_DIR/runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.maibox]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.maibox.options]
        BinaryName = "$MAIBOX"
        Root = "$LANE_DIR/maibox"
EOF
)
  mkdir -p "$LANE_DIR/cni" "$LANE_ROOT"
  if [ "$(cat "$CONFIG" 2>/dev/null)" != "$new" ]; then
    echo "$new" > "$CONFIG"; echo changed
  fi
}

# oci_import NAME ROOTFS ENTRYPOINT_JSON: an OCI image archive of ROOTFS as one layer, imported.
oci_import() {
  local name=$1 rootfs=$2 entrypoint=$3 t
  t=$(mktemp -d); CLEANUP+=("$t"); mkdir -p "$t/blobs/sha256"
  blob() { # blob FILE: moves FILE into the layout as a blob; sets DIGEST and SIZE
    DIGEST=$(sha256sum < "$1" | cut -d' ' -f1); SIZE=$(stat -c %s "$1")
    mv "$1" "$t/blobs/sha256/$DIGEST"
  }
  tar -C "$rootfs" -cf "$t/layer" . && blob "$t/layer"
  local layer=$DIGEST layer_size=$SIZE
  printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$(dpkg --print-architecture)" "$entrypoint" "$layer" > "$t/config" && blob "$t/config"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$DIGEST" "$SIZE" "$layer" "$layer_size" > "$t/manifest" && blob "$t/manifest"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s"}}]}' \
    "$DIGEST" "$SIZE" "$name" > "$t/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$t/oci-layout"
  tar -C "$t" -cf - oci-layout index.json blobs | ctr_ images import - >/dev/null
  echo "imported $name"
}

build_images() {
  local r; r=$(mktemp -d); CLEANUP+=("$r")
  if ! ctr_ images check "name==$PAUSE_IMAGE" 2>/dev/null | grep -q complete; then
    mkdir -p "$r/pause"
    rustc --edition 2021 -O -C target-feature=+crt-static -C panic=abort -C strip=symbols \
      -o "$r/pause/pause" "$HERE/pause.rs"
    oci_import "$PAUSE_IMAGE" "$r/pause" '["/pause"]'
  fi
  if ! ctr_ images check "name==$TEST_IMAGE" 2>/dev/null | grep -q complete; then
    local b=$r/busybox
    mkdir -p "$b"/{bin,dev,etc,proc,root,sys,tmp}; chmod 1777 "$b/tmp"; chmod 700 "$b/root"
    cp /bin/busybox "$b/bin/busybox"
    for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$b/bin/$a"; done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$b/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$b/etc/group"
    oci_import "$TEST_IMAGE" "$b" '["/bin/sh"]'
  fi
}

up() {
  : "${MAIBOX:?set MAIBOX to the maibox binary to register}"
  [ -x "$MAIBOX" ] || { echo "MAIBOX=$MAIBOX is not an executable" >&2; exit 1; }
  install_packages
  local changed pid; changed=$(write_config)
  if pid=$(our_pid) && [ -n "$changed" ]; then
    echo "containerd $pid: configuration changed, restarting"; down_daemon
  fi
  if ! our_pid >/dev/null; then
    setsid containerd --config "$CONFIG" </dev/null >>"$LOG" 2>&1 &
    echo $! > "$PIDFILE"
    for _ in $(seq 120); do
      ctr --address "$SOCK" version >/dev/null 2>&1 && break
      our_pid >/dev/null || { echo "containerd exited; last lines of $LOG:" >&2; tail -20 "$LOG" >&2; exit 1; }
      sleep 0.5
    done
    ctr --address "$SOCK" version >/dev/null 2>&1 || { echo "containerd did not answer in 60 s, see $LOG" >&2; exit 1; }
    echo "containerd $(cat "$PIDFILE") started on $SOCK, log $LOG"
  fi
  build_images
}

# Every container and task the lane's tests left (a failed test), then the daemon.
clean_left() {
  local c
  for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
  sleep 0.5
  for c in $(ctr_ containers ls -q 2>/dev/null); do
    ctr_ tasks delete -f "$c" >/dev/null 2>&1 || true
    ctr_ containers delete "$c" >/dev/null 2>&1 && echo "removed left container $c"
  done
}

down_daemon() {
  local pid; pid=$(our_pid) || return 0
  kill "$pid"
  for _ in $(seq 60); do [ -d /proc/"$pid" ] || break; sleep 0.5; done
  if [ -d /proc/"$pid" ]; then echo "containerd $pid still running after 30 s" >&2; exit 1; fi
  rm -f "$PIDFILE"; echo "containerd $pid stopped"
}

down() {
  if ! our_pid >/dev/null; then echo "no containerd started by this script is running"; rm -f "$PIDFILE"; return; fi
  clean_left
  down_daemon
}

status() {
  local pid
  if pid=$(our_pid); then echo "containerd $pid (started by this script) on $SOCK, log $LOG"; else echo "no containerd started by this script"; return 1; fi
  ctr --address "$SOCK" version | sed -n 's/^ *Version: */server /p' | tail -1
  ctr_ images ls -q
}

case "${1:-}" in
  up|down|status) "$1" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
