#!/usr/bin/env bash
# Installs what the build, the tests and the demo need, with apt-get; quick when all is present.
set -euo pipefail
pkgs=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libmetis-dev libopenblas-dev
      postgresql-15-cron liburing-dev libipc-run-perl libdbd-pg-perl librsvg2-bin libgloo-dev make gcc g++ perl python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The server package's minor version must match the headers we compile against.
id postgres >/dev/null 2>&1 || { echo "deps: the postgres user is missing" >&2; exit 1; }
# pgvector, for the tests of gnn.embed's vector output: built from ../shared/vendor when that
# folder has its source and it is not installed yet (gnn itself never needs it).
VENDOR="$(cd "$(dirname "$0")/.." && pwd)/../shared/vendor"
if [ ! -f "$(pg_config --sharedir)/extension/vector.control" ] && ls "$VENDOR"/pgvector-*.tar.gz >/dev/null 2>&1; then
  echo "deps: building pgvector from $VENDOR"
  t=$(mktemp -d)
  tar xzf "$(ls "$VENDOR"/pgvector-*.tar.gz | head -1)" -C "$t"
  src=$(ls -d "$t"/pgvector-*/ | head -1)
  make -C "$src" >/dev/null 2>&1 && make -C "$src" install >/dev/null 2>&1 || echo "deps: pgvector did not build; its tests will be skipped" >&2
  rm -rf "$t"
fi
