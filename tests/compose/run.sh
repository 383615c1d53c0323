#!/usr/bin/env bash
# `make compose-test`: the compose stack, built and run for real, checked from the host.
#
#   1. tools: docker.io, docker-compose (1.29, no compose v2 needed), debootstrap,
#      prometheus (for promtool) and kcat are installed when missing (root only);
#   2. a Docker daemon: the running one, else dockerd is started here with its data under
#      the cache directory (so images survive to the next run) and stopped at the end;
#   3. a Debian bookworm base image: MINIKAFKA_BASE_IMAGE if set, else the official
#      Python image if it can be pulled, else local/debian-bookworm, made once with
#      debootstrap from this machine's Debian mirror and kept in the daemon's cache;
#   4. wheels: the dependencies' wheels are built once per dependency set and kept in
#      the cache; the project's own wheel every run (docker/wheels/, the build context);
#   5. build, `docker-compose up -d` (which waits for ZooKeeper's and the brokers' health
#      checks), then tests/compose/check_stack.py: kcat through 127.0.0.1:9092-9094,
#      Prometheus targets, every dashboard panel's expression, one broker killed;
#   6. `promtool check rules` and `promtool test rules`;
#   7. `docker-compose down -v`, and dockerd stopped if this script started it.
#
# Environment: PYTHON (the project's venv python; default .venv/bin/python),
# MINIKAFKA_COMPOSE_CACHE (default /var/cache/minikafka-compose, or ~/.cache/... when not
# root), MINIKAFKA_BASE_IMAGE (skip the base-image search), KEEP_STACK=1 (leave it up).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# Debian's docker client (20.10) and compose 1.29, ahead of any other docker on PATH
export PATH=/usr/bin:/usr/sbin:$PATH
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
if [ "$(id -u)" = 0 ]; then
  CACHE=${MINIKAFKA_COMPOSE_CACHE:-/var/cache/minikafka-compose}
else
  CACHE=${MINIKAFKA_COMPOSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minikafka-compose}
fi
PROJECT=minikafka-compose-test
COMPOSE=(docker-compose -p "$PROJECT" -f docker-compose.yml -f docker-compose.test.yml)
OFFICIAL_BASE=python:3.11-slim-bookworm
LOCAL_BASE=local/debian-bookworm
STARTED_DOCKERD=""
STACK_UP=""

say() { printf '== compose-test %s: %s\n' "$(date +%T)" "$*"; }
die() { say "FAILED: $*" >&2; exit 1; }

cleanup() {
  local status=$?
  set +e
  if [ -n "$STACK_UP" ] && [ -z "${KEEP_STACK:-}" ]; then
    if [ "$status" != 0 ]; then
      say "logs of the failed run (last lines of each service)"
      "${COMPOSE[@]}" logs --no-color --tail=40 >&2
    fi
    say "docker-compose down -v"
    "${COMPOSE[@]}" down -v -t 30 --remove-orphans >/dev/null 2>&1
  fi
  if [ -n "$STARTED_DOCKERD" ] && [ -z "${KEEP_STACK:-}" ]; then
    say "stopping the dockerd this run started (pid $STARTED_DOCKERD)"
    kill "$STARTED_DOCKERD" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 0.1; done
  fi
  exit "$status"
}
trap cleanup EXIT

# --- 1. tools ---------------------------------------------------------------------------
need=()
command -v docker >/dev/null 2>&1 && [ -x /usr/bin/docker ] || need+=(docker.io)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing ${need[*]}: sudo apt-get install ${need[*]}"
  say "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
  # Debian's prometheus package starts its own server; this test needs only promtool
  if command -v systemctl >/dev/null 2>&1; then systemctl stop prometheus >/dev/null 2>&1 || true; fi
fi
[ -x "$PYTHON" ] || die "no project python at $PYTHON (run make venv, or set PYTHON)"
mkdir -p "$CACHE"

# --- 2. the Docker daemon -----------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || die "no Docker daemon answers and only root can start one"
  say "starting dockerd (data in $CACHE/docker)"
  dockerd --data-root "$CACHE/docker" --pidfile "$CACHE/dockerd.pid" \
    >"$CACHE/dockerd.log" 2>&1 &
  STARTED_DOCKERD=$!
  for _ in $(seq 1 300); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$STARTED_DOCKERD" 2>/dev/null || { tail -20 "$CACHE/dockerd.log" >&2; die "dockerd exited"; }
    sleep 0.1
  done
  docker info >/dev/null 2>&1 || die "dockerd did not answer within 30 s; see $CACHE/dockerd.log"
fi
# a stack left over by an interrupted run holds the ports: take it down first
"${COMPOSE[@]}" down -v -t 10 --remove-orphans >/dev/null 2>&1 || true

# --- 3. the base image --------------------------------------------------------------------
debian_mirror() {
  # the first Debian URI this machine's apt uses (deb822 .sources or one-line lists)
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)
  [ -n "$uri" ] || uri=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    | awk '{print $2}' | grep -v security | head -1)
  echo "${uri:-http://deb.debian.org/debian}"
}
if [ -n "${MINIKAFKA_BASE_IMAGE:-}" ]; then
  BASE=$MINIKAFKA_BASE_IMAGE
elif docker image inspect "$OFFICIAL_BASE" >/dev/null 2>&1 \
    || timeout 60 docker pull -q "$OFFICIAL_BASE" >/dev/null 2>&1; then
  BASE=$OFFICIAL_BASE
elif docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
  BASE=$LOCAL_BASE
else
  [ "$(id -u)" = 0 ] || die "no base image can be pulled, and debootstrap needs root"
  mirror=$(debian_mirror)
  say "no registry: making $LOCAL_BASE with debootstrap from $mirror"
  rootfs="$CACHE/rootfs"
  rm -rf "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed"; }
  tar -C "$rootfs" -c . | docker import - "$LOCAL_BASE" >/dev/null
  rm -rf "$rootfs"
  BASE=$LOCAL_BASE
fi
export MINIKAFKA_BASE_IMAGE=$BASE
say "base image $BASE"

# --- 4. wheels ------------------------------------------------------------------------------
bash docker/wheels.sh "$PYTHON" "$CACHE/wheels"

# --- 5. the stack -------------------------------------------------------------------------
say "building the images"
"${COMPOSE[@]}" build -q
say "docker-compose up -d (waits for ZooKeeper's and the brokers' health checks)"
STACK_UP=1
"${COMPOSE[@]}" up -d
"$PYTHON" tests/compose/check_stack.py --project "$PROJECT" \
  --compose-file docker-compose.yml --compose-file docker-compose.test.yml

# --- 6. the rules -------------------------------------------------------------------------
say "promtool check rules, promtool test rules"
promtool check rules monitoring/prometheus/rules/*.yml
(cd monitoring/prometheus && promtool test rules tests/*.yml)
say "passed"
