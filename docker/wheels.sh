#!/usr/bin/env bash
# Build the wheels the Dockerfile installs, on the host (the image build needs no index):
#   docker/wheels/deps/      every dependency of the project (pip wheel), kept in
#                            CACHE/deps-<hash of the dependency list and Python version>
#                            so that a second build reuses them without asking the index
#   docker/wheels/project/   the project's own wheel, built every time
# Usage: docker/wheels.sh [PYTHON] [CACHE]   (`make compose-wheels`; make compose-test)
# PYTHON must be the Python 3.11 the image runs (the wheels are cp311).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-.venv/bin/python}
CACHE=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/minikafka-wheels}
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), "the image runs Python 3.11"'
key=$( { sed -n '/^dependencies = \[/,/^\]/p' pyproject.toml; "$PYTHON" -V; uname -m; } \
  | sha256sum | cut -c1-16)
deps="$CACHE/deps-$key"
if [ ! -f "$deps/.complete" ]; then
  echo "docker/wheels.sh: building the dependencies' wheels into $deps"
  rm -rf "$deps" "$deps.tmp"
  mkdir -p "$deps.tmp"
  "$PYTHON" -m pip wheel --quiet --wheel-dir "$deps.tmp" .
  rm -f "$deps.tmp"/minikafka-*.whl
  touch "$deps.tmp/.complete"
  mv "$deps.tmp" "$deps"
fi
rm -rf docker/wheels
mkdir -p docker/wheels/deps docker/wheels/project
# hard links when the cache is on the same file system (no copy of ~0.5 GB), else copies
cp -l "$deps"/*.whl docker/wheels/deps/ 2>/dev/null || cp "$deps"/*.whl docker/wheels/deps/
# (the build backend's warnings are shown only when the build fails)
log=$(mktemp)
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir docker/wheels/project . >"$log" 2>&1 \
  || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
rm -rf build ./*.egg-info
echo "docker/wheels.sh: $(ls docker/wheels/deps | wc -l) dependency wheels, $(ls docker/wheels/project)"
