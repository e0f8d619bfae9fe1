#!/usr/bin/env bash
# docker-engine.sh - run a real local Docker engine for maibox's Docker lane
# (`cargo xtask test-docker`, part of `cargo xtask test` as root). The project's own copy of
# the workplace recipe: the lane must not depend on files outside the repository.
#
# It serves two kinds of tests against a genuine Docker 20.10 engine:
#   * an OCI runtime plugged into Docker:  docker run --runtime=<name> ...
#   * a backend that drives Docker through the Engine API on /var/run/docker.sock.
# Target: a Debian 12 machine run as root, with no systemd, hybrid cgroups (v1 controllers plus
# a cgroup2 at /sys/fs/cgroup/unified with no controller enabled), and no Docker Hub access.
#
#   docker-engine.sh up      install docker.io + crun if missing, start dockerd, import the test image
#   docker-engine.sh down    stop the dockerd that "up" started (by its recorded PID)
#   docker-engine.sh status
#
# dockerd runs with --iptables=false --ip6tables=false --bridge=none, so the host's firewall,
# routes and interfaces are left alone; containers get loopback only (default, or --network none)
# or --network host.
# Storage (overlay2, else vfs) and cgroup driver (cgroupfs) are dockerd's defaults here.
# /etc/docker/daemon.json is owned by this script: it registers "crun" and EXTRA_RUNTIMES.
#
# Environment:
#   TEST_IMAGE      test image to import if missing (default maibox-python:test): the host's
#                   /usr/bin/python3 with its stdlib and shared libraries, /bin/sh, and an
#                   /etc/passwd with root, sandbox (1000:1000) and nobody. Made in seconds.
#   EXTRA_RUNTIMES  more OCI runtimes to register, "name=/abs/path[,ARG...] ..." (e.g.
#                   "maibox=/usr/local/bin/maibox maibox-strict=/usr/local/bin/maibox,--hardened":
#                   ARGs become the runtime's runtimeArgs)
#   ENGINE_DIR      where the PID file and dockerd.log go (default /tmp/docker-engine)
set -euo pipefail

TEST_IMAGE=${TEST_IMAGE:-maibox-python:test}
EXTRA_RUNTIMES=${EXTRA_RUNTIMES:-}
ENGINE_DIR=${ENGINE_DIR:-/tmp/docker-engine}
PIDFILE=$ENGINE_DIR/dockerd.pid
LOG=$ENGINE_DIR/dockerd.log
CRUN_HYBRID=/usr/local/sbin/crun-hybrid
CLEANUP=()
trap 'rm -rf "${CLEANUP[@]}"' EXIT

our_pid() { # PID of the dockerd we started, if it is still that process
  local pid; pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ] && echo "$pid"
}

install_packages() {
  local need=()
  command -v dockerd >/dev/null || need+=(docker.io)
  command -v crun >/dev/null || need+=(crun)
  [ -x /usr/bin/python3 ] || need+=(python3)
  [ ${#need[@]} -eq 0 ] && return
  echo "installing ${need[*]}"
  if [ ! -e /usr/sbin/policy-rc.d ]; then  # keep package scripts from starting a default (iptables) dockerd
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    CLEANUP+=(/usr/sbin/policy-rc.d)
  fi
  # The VM lane may be installing QEMU at the same time: wait for dpkg's lock
  # instead of failing on it (apt's own timeout; a run in progress is not an
  # interrupted one, so no `dpkg --audit` before it).
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  local out rc=0
  out=$(apt_install "${need[@]}" 2>&1) || rc=$?
  # A dpkg run killed half-way leaves apt refusing every install until the
  # unpacked packages are configured: apt says so once it holds the lock,
  # and then no other run is in progress. Finish that run, then retry.
  if ((rc)) && grep -q 'dpkg was interrupted' <<<"$out"; then
    echo "an earlier dpkg run was interrupted: dpkg --configure -a, then retrying"
    DEBIAN_FRONTEND=noninteractive dpkg --configure -a >/dev/null
    rc=0
    out=$(apt_install "${need[@]}" 2>&1) || rc=$?
    ((rc == 0)) || { printf '%s\n' "$out" >&2; return "$rc"; }
  elif ((rc)); then
    printf '%s\n' "$out" >&2
    return "$rc"
  fi
}

apt_install() { # packages...
  DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get -o DPkg::Lock::Timeout=600 \
    install -y -qq --no-install-recommends "$@" >/dev/null
}

write_config() { # prints "changed" if /etc/docker/daemon.json was rewritten
  local crun; crun=$(command -v crun)
  if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    # crun refuses hybrid cgroups when cgroup2 lists any controller (here: hugetlb). Let it see an
    # empty list inside a private mount namespace; the host is not changed.
    cat > "$CRUN_HYBRID" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount --bind /dev/null /sys/fs/cgroup/unified/cgroup.controllers && exec $crun "\$@"' crun "\$@"
EOF
    chmod 755 "$CRUN_HYBRID"; crun=$CRUN_HYBRID
  fi
  local rt="\"crun\": {\"path\": \"$crun\"}" kv spec args
  for kv in $EXTRA_RUNTIMES; do
    spec=${kv#*=}; args=""
    if [ "$spec" != "${spec%%,*}" ]; then
      args=$(printf '"%s", ' $(echo "${spec#*,}" | tr , ' ')); args=", \"runtimeArgs\": [${args%, }]"
    fi
    rt+=", \"${kv%%=*}\": {\"path\": \"${spec%%,*}\"$args}"
  done
  local new="{ \"runtimes\": { $rt } }"
  mkdir -p /etc/docker
  if [ "$(cat /etc/docker/daemon.json 2>/dev/null)" != "$new" ]; then
    echo "$new" > /etc/docker/daemon.json; echo changed
  fi
}

build_image() {
  local py std r
  py=$(readlink -f /usr/bin/python3); std=/usr/lib/$(basename "$py"); r=$(mktemp -d); CLEANUP+=("$r" "$r.files")
  mkdir -p "$r"/usr/{bin,lib,lib64,sbin} "$r"/{etc,tmp,proc,sys,dev,root,home/sandbox}
  for d in bin lib lib64 sbin; do ln -s usr/$d "$r/$d"; done
  chmod 1777 "$r/tmp"; chown 1000:1000 "$r/home/sandbox"
  # every file as its path under /usr (the host is merged-/usr) plus its symlink target
  { echo /usr/bin/python3; echo /bin/sh
    { ldd "$py"; ldd /bin/sh; find "$std/lib-dynload" -name '*.so' -exec ldd {} \; ; } |
      awk '/=> \//{print $3} /^[ \t]*\/lib/{print $1}'
  } | while read -r p; do echo "$(realpath "$(dirname "$p")")/$(basename "$p")"; realpath "$p"; done |
    sort -u | sed 's|^/||' > "$r.files"
  tar -C / -cf - -T "$r.files" --exclude=__pycache__ \
      --exclude="${std#/}/"{test,idlelib,tkinter,turtledemo,ensurepip,lib2to3/tests,'config-*',dist-packages,sitecustomize.py} \
      "${std#/}" | tar -C "$r" -xf -
  printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000::/home/sandbox:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$r/etc/passwd"
  printf 'root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n' > "$r/etc/group"
  tar -C "$r" -cf - . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'ENV LANG=C.UTF-8' - "$TEST_IMAGE" >/dev/null
}

up() {
  mkdir -p "$ENGINE_DIR"
  install_packages
  local changed pid; changed=$(write_config)
  if pid=$(our_pid); then
    [ -z "$changed" ] || { kill -HUP "$pid"; echo "dockerd $pid: reloaded runtimes"; }
  elif docker info >/dev/null 2>&1; then
    echo "a Docker engine not started by this script already answers; using it as is"
  else
    setsid dockerd --iptables=false --ip6tables=false --bridge=none </dev/null >>"$LOG" 2>&1 &
    echo $! > "$PIDFILE"
    for _ in $(seq 120); do
      docker info >/dev/null 2>&1 && break
      our_pid >/dev/null || { echo "dockerd exited; last lines of $LOG:" >&2; tail -20 "$LOG" >&2; exit 1; }
      sleep 0.5
    done
    docker info >/dev/null 2>&1 || { echo "dockerd did not answer in 60 s, see $LOG" >&2; exit 1; }
    echo "dockerd $(cat "$PIDFILE") started, log $LOG"
  fi
  docker image inspect "$TEST_IMAGE" >/dev/null 2>&1 || { build_image; echo "imported $TEST_IMAGE"; }
  docker run --rm --network none "$TEST_IMAGE" python3 -c 'print("engine ok")'
}

down() {
  local pid
  if ! pid=$(our_pid); then echo "no dockerd started by this script is running"; rm -f "$PIDFILE"; return; fi
  kill "$pid"
  for _ in $(seq 60); do [ -d /proc/"$pid" ] || break; sleep 0.5; done
  if [ -d /proc/"$pid" ]; then echo "dockerd $pid still running after 30 s" >&2; exit 1; fi
  rm -f "$PIDFILE"; echo "dockerd $pid stopped"
}

status() {
  local pid
  if pid=$(our_pid); then echo "dockerd $pid (started by this script), log $LOG"; else echo "no dockerd started by this script"; fi
  if docker info >/dev/null 2>&1; then
    docker info --format 'engine {{.ServerVersion}}, storage {{.Driver}}, cgroup {{.CgroupDriver}} v{{.CgroupVersion}}, default runtime {{.DefaultRuntime}}'
    docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' | sed 's/^/runtimes: /'
    docker image inspect "$TEST_IMAGE" >/dev/null 2>&1 && echo "image $TEST_IMAGE present" || echo "image $TEST_IMAGE missing"
  else
    echo "engine not answering"; return 1
  fi
}

case "${1:-}" in
  up|down|status) "$1" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
