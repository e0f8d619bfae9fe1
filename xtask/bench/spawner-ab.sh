#!/usr/bin/env bash
# A/B of the server's spawner (docs/benchmarks.md): alternates `maibox serve` with the
# built-in configuration (spawner on) and with `server.spawner: false`, runs
# `maibox exec --server` on an empty script N times from P shells against each, and
# prints per request the server's CPU and page faults (/proc/PID/stat), the spawner's,
# the CPU of the reaped sandboxes, and the wall time.
# usage: P=2 xtask/bench/spawner-ab.sh BIN strict|fork [N] [ROUNDS]   (as root)
set -euo pipefail
BIN=$1; MODE=$2; N=${3:-100}; R=${4:-3}; P=${P:-1}
DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT
: > "$DIR/empty.py"
# The built-in configuration is config/sandbox.yaml; the same with the spawner off.
sed 's/^  spawner: true.*/  spawner: false/' "$(dirname "$0")/../../config/sandbox.yaml" > "$DIR/off.yaml"
grep -q "^  spawner: false" "$DIR/off.yaml"
ticks() { awk '{print $14+$15, $10, $16+$17}' "/proc/$1/stat"; }
per() { echo "scale=2; ($1) / $N" | bc; }
one() {
  local label=$1; shift
  local sock=$DIR/s.sock; rm -f "$sock"
  "$BIN" serve --socket "$sock" --warm-mode "$MODE" "$@" >"$DIR/serve.log" 2>&1 &
  local sp=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  sleep 1.5
  local run=("$BIN" exec --server --socket "$sock" --trust untrusted "$DIR/empty.py")
  for _ in 1 2 3 4 5; do "${run[@]}" >/dev/null; done
  sleep 0.5
  local spw; spw=$(pgrep -P "$sp" -f "serve --socket" | head -1 || true)
  read -r a0 f0 c0 < <(ticks "$sp")
  local s0=(0 0); [ -n "$spw" ] && read -r -a s0 < <(ticks "$spw")
  local t0; t0=$(date +%s.%N); local ws=()
  for _ in $(seq "$P"); do
    ( for _ in $(seq $((N / P))); do "${run[@]}" >/dev/null; done ) & ws+=($!)
  done
  wait "${ws[@]}"
  local t1; t1=$(date +%s.%N); sleep 0.5
  read -r a1 f1 c1 < <(ticks "$sp")
  local s1=(0 0); [ -n "$spw" ] && read -r -a s1 < <(ticks "$spw")
  local hz; hz=$(getconf CLK_TCK)
  echo "$label: server $(per "($a1-$a0)*1000/$hz") ms cpu, $(per "$f1-$f0") faults;" \
    "spawner $(per "(${s1[0]}-${s0[0]})*1000/$hz") ms cpu, $(per "${s1[1]}-${s0[1]}") faults;" \
    "reaped sandboxes $(per "($c1-$c0)*1000/$hz") ms cpu; wall $(per "($t1-$t0)*1000") ms (per request)"
  kill -TERM "$sp"; wait "$sp" 2>/dev/null || true
}
for _ in $(seq "$R"); do
  one "spawner on "
  one "spawner off" --config "$DIR/off.yaml"
done
