#!/usr/bin/env bash
# pg_bundle.sh: PostgreSQL 15 for a machine without network (the GPU machine).
#
#   bash test/gpu/pg_bundle.sh fetch      # here: apt-get download the .debs into test/gpu/debs,
#                                         # and copy the Cora files the checks read into
#                                         # test/gpu/data (from ../shared/data)
#   source test/gpu/pg_bundle.sh install  # there: dpkg -x them into $PGB_ROOT (default
#                                         # /tmp/pgbundle) and export PG_CONFIG, PATH,
#                                         # LD_LIBRARY_PATH for the build and the server, and
#                                         # CPATH / LIBRARY_PATH for compiling against it
#
# The bundle is the server, client and server-dev packages, the -dev packages
# gnn is compiled against (libpq, METIS, OpenBLAS, liburing: headers and the
# unversioned .so links), and every library package the server, psql and
# gnn.so link against (read off ldd here), less libc, libgcc and libstdc++,
# which every machine has and which must not be mixed.  Debian's PostgreSQL
# binaries find their share and lib directories relative to their own
# location, so the unpacked tree works where it lies; gnn installs into it
# with its pg_config.  test/gpu/debs and test/gpu/data are ignored by git: name
# both in the device tool's carry (../shared does not travel).
PGB_DIR=${PGB_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/debs}
PGB_DATA=${PGB_DATA:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/data}
PGB_ROOT=${PGB_ROOT:-/tmp/pgbundle}

pgb_fetch() {
	set -e
	local pgbin=/usr/lib/postgresql/15/bin pkgs
	mkdir -p "$PGB_DIR"
	pkgs="postgresql-15 postgresql-client-15 postgresql-server-dev-15 libpq5 tzdata"
	# what compiling gnn.so and the test programs needs beyond a compiler (dpkg -x runs no
	# update-alternatives: OpenBLAS is found in its openblas-pthread directories, below)
	pkgs="$pkgs libpq-dev libmetis-dev libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread liburing-dev"
	# the libraries' packages, from what the binaries link here
	pkgs="$pkgs $(for b in "$pgbin/postgres" "$pgbin/initdb" "$pgbin/psql" "$pgbin/pg_ctl" \
			/usr/lib/postgresql/15/lib/gnn.so /usr/lib/postgresql/15/lib/gnn_dist.so; do
		[ -e "$b" ] && ldd "$b" | awk '/=>/ {print $3}'
	done | sort -u | xargs -r -n1 readlink -f | while read -r f; do
		dpkg -S "$f" 2>/dev/null || dpkg -S "${f#/usr}" 2>/dev/null
	done | cut -d: -f1 | sort -u | grep -v -x -E 'libc6|libgcc-s1|libstdc\+\+6' | tr '\n' ' ')"
	(cd "$PGB_DIR" && rm -f ./*.deb && apt-get download $pkgs 2>&1 | grep -v "^W: Download is performed unsandboxed")
	echo "pg_bundle: $(ls "$PGB_DIR"/*.deb | wc -l) packages, $(du -sh "$PGB_DIR" | cut -f1) in $PGB_DIR"
	# the data: Cora's files where the checks look first; the dense features.csv (7.5 MB)
	# left out where features_coo.csv is there (read first, the same values): the
	# tree that travels to the device machine is at most 64 MiB
	local shared
	for shared in ${GNN_DATA_DIR:+"$GNN_DATA_DIR"} "$PGB_DIR/../../../../shared/data" "$PGB_DIR/../../../shared/data"; do
		if [ -f "$shared/cora/edges.csv" ]; then
			rm -rf "$PGB_DATA/cora"
			mkdir -p "$PGB_DATA/cora"
			cp "$shared"/cora/*.csv "$PGB_DATA/cora/"
			[ -f "$PGB_DATA/cora/features_coo.csv" ] && rm -f "$PGB_DATA/cora/features.csv"
			echo "pg_bundle: Cora, $(du -sh "$PGB_DATA" | cut -f1) in $PGB_DATA"
			break
		fi
	done
	[ -f "$PGB_DATA/cora/edges.csv" ] || echo "pg_bundle: no ../shared/data/cora here: the GPU run will have no Cora" >&2
	set +e
}

pgb_install() {
	local d
	ls "$PGB_DIR"/*.deb > /dev/null 2>&1 || { echo "pg_bundle: no .debs in $PGB_DIR (run: bash test/gpu/pg_bundle.sh fetch)"; return 1; }
	mkdir -p "$PGB_ROOT"
	for d in "$PGB_DIR"/*.deb; do dpkg -x "$d" "$PGB_ROOT" || return 1; done
	export PG_CONFIG="$PGB_ROOT/usr/lib/postgresql/15/bin/pg_config"
	export PG_BINDIR="$PGB_ROOT/usr/lib/postgresql/15/bin"
	export PATH="$PG_BINDIR:$PATH"
	# the bundle's libraries after the machine's own: only what is missing comes from it
	export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PGB_ROOT/usr/lib/x86_64-linux-gnu:$PGB_ROOT/lib/x86_64-linux-gnu:$PGB_ROOT/usr/lib/x86_64-linux-gnu/openblas-pthread:$PGB_ROOT/usr/lib"
	# compiling against it: its headers (libpq-fe.h, metis.h, cblas.h, liburing.h) and .so links
	export CPATH="${CPATH:+$CPATH:}$PGB_ROOT/usr/include:$PGB_ROOT/usr/include/postgresql:$PGB_ROOT/usr/include/x86_64-linux-gnu/openblas-pthread"
	export LIBRARY_PATH="${LIBRARY_PATH:+$LIBRARY_PATH:}$PGB_ROOT/usr/lib/x86_64-linux-gnu:$PGB_ROOT/usr/lib/x86_64-linux-gnu/openblas-pthread"
	"$PG_CONFIG" --version > /dev/null || { echo "pg_bundle: pg_config does not run"; return 1; }
	echo "pg_bundle: $("$PG_CONFIG" --version) in $PGB_ROOT (sharedir $("$PG_CONFIG" --sharedir))"
}

case "${1:-}" in
	fetch) pgb_fetch ;;
	install) pgb_install ;;
	*) echo "usage: pg_bundle.sh fetch | source pg_bundle.sh install" >&2 ;;
esac
