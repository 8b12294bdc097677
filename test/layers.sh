#!/usr/bin/env bash
# The layering test (issue #40): from the BUILT objects of gnn.so (make), the
# folder-to-folder dependency graph of src/core and src/pg, read off the
# symbols (nm): an object's undefined symbol that another object defines is an
# arrow from the first object's folder to the second's.  Fails if a folder is
# not in the declared order below, if the folders form a cycle, if an arrow
# points up the order, if the core references PostgreSQL, or if a SQL-function
# file (src/pg/*/funcs_*.c) is called by another file.  No server needed.
#
# Usage: bash test/layers.sh [objects...]   (default: every src/core and src/pg object)
set -uo pipefail
cd "$(dirname "$0")/.."

# The layers, bottom first (ARCHITECTURE.md says what each owns).  A folder
# may use the folders before it, never one after it.  "pg" is src/pg's own
# top (gnn.c: _PG_init, which only delegates).
ORDER="core/base core/graph core/store core/nn core/sample core/infer core/dist core/train
       pg/common pg/registry pg/load pg/jobs pg/serve pg"

# PostgreSQL's symbols the core must never reference (it returns gnn_status codes)
PG_SYMS='^(errstart|errstart_cold|errfinish|errmsg|errmsg_internal|errcode|errdetail|errhint|elog_start|elog_finish|pg_re_throw|ExceptionalCondition|PG_exception_stack|error_context_stack|palloc|palloc0|palloc_extended|pfree|repalloc|repalloc_huge|pstrdup|psprintf|MemoryContextAlloc.*|MemoryContextStrdup|CurrentMemoryContext|TopMemoryContext|SPI_.*|LWLockAcquire|LWLockRelease|ProcessInterrupts|InterruptPending|CHECK_FOR_INTERRUPTS)$'

if [ $# -gt 0 ]; then
  OBJS=("$@")
else
  # the objects of the sources in the tree (an object whose .c is gone, left by an
  # older layout in a working copy, is not part of gnn.so)
  mapfile -t OBJS < <(find src/core src/pg -name '*.o' | sort | while read -r o; do [ -f "${o%.o}.c" ] && echo "$o"; done)
fi

n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/#   /'; }

if [ ${#OBJS[@]} -eq 0 ]; then
  notok "built objects exist (run make first)"
  echo "1..$n"; exit 1
fi
ok "${#OBJS[@]} objects of src/core and src/pg built"

# object<TAB>folder<TAB>kind<TAB>symbol, kind D (defined, global) or U (undefined)
# (one nm for every object: nm -A names each line's object, "src/core/x/y.o: sym T ...")
TABLE=$(nm -P -g -A "${OBJS[@]}" 2>/dev/null | awk '
  { o = $1; sub(/:$/, "", o); d = o; sub(/^src\//, "", d); sub(/\/[^\/]*$/, "", d) }
  $3 == "U" || $3 == "w" || $3 == "v" { print o "\t" d "\tU\t" $2; next }
  { print o "\t" d "\tD\t" $2 }')

# 2: every object sits in a declared folder
bad=$(echo "$TABLE" | awk -F'\t' -v order="$ORDER" '
  BEGIN { n = split(order, a, /[ \n]+/); for (i = 1; i <= n; i++) if (a[i] != "") rank[a[i]] = i }
  !($2 in rank) && !seen[$1]++ { print $1 " (folder " $2 ")" }')
if [ -z "$bad" ]; then ok "every object sits in a declared layer folder"
else notok "every object sits in a declared layer folder: $(echo "$bad" | wc -l) do not" "$bad"; fi

# the arrows: "from<TAB>to<TAB>fromobj<TAB>toobj<TAB>symbol", one per symbol
ARROWS=$(echo "$TABLE" | awk -F'\t' '
  $3 == "D" { if (!($4 in owner)) { owner[$4] = $1; ofold[$4] = $2 } next }
  { und[++nu] = $0 }
  END { for (i = 1; i <= nu; i++) { split(und[i], f, "\t"); s = f[4];
          if ((s in owner) && owner[s] != f[1]) print f[2] "\t" ofold[s] "\t" f[1] "\t" owner[s] "\t" s } }' | sort -u)

# 3: no cycle between folders (depth-first search over the folder graph)
cyc=$(echo "$ARROWS" | awk -F'\t' '
  $1 != $2 && $1 != "" { if (!((($1) SUBSEP ($2)) in e)) { e[$1, $2] = 1; adj[$1] = adj[$1] " " $2 }
                         if (length(sym[$1, $2]) < 300) sym[$1, $2] = sym[$1, $2] " " $5 }
  function dfs(u,   i, k, nb, v, p, j) {
    state[u] = 1; stack[++sp] = u
    k = split(adj[u], nb, " ")
    for (i = 1; i <= k; i++) {
      v = nb[i]
      if (state[v] == 1) {
        p = ""; for (j = sp; j >= 1; j--) { p = stack[j] (p == "" ? "" : " -> ") p; if (stack[j] == v) break }
        print "cycle: " p " -> " v
        for (j = j; j < sp; j++) print "  " stack[j] " -> " stack[j + 1] ":" sym[stack[j], stack[j + 1]]
        print "  " u " -> " v ":" sym[u, v]
      } else if (state[v] == 0) dfs(v)
    }
    state[u] = 2; sp--
  }
  END { for (x in adj) if (state[x] == 0) dfs(x) }')
if [ -z "$cyc" ]; then ok "no cycle between folders"
else notok "no cycle between folders" "$cyc"; fi

# 4: every arrow points down the declared order
up=$(echo "$ARROWS" | awk -F'\t' -v order="$ORDER" '
  BEGIN { n = split(order, a, /[ \n]+/); for (i = 1; i <= n; i++) if (a[i] != "") rank[a[i]] = i }
  $1 != $2 && ($1 in rank) && ($2 in rank) && rank[$2] > rank[$1] { print $1 " -> " $2 ": " $3 " uses " $5 " of " $4 }')
if [ -z "$up" ]; then ok "every arrow between folders points down the order ($(echo $ORDER | sed 's/ / < /g'))"
else notok "every arrow between folders points down the order: $(echo "$up" | awk '{print $1 $2 $3}' | sort -u | wc -l) do not" "$up"; fi

# 5: the core is PostgreSQL-free
pgref=$(echo "$TABLE" | awk -F'\t' -v re="$PG_SYMS" '$2 ~ /^core/ && $3 == "U" && $4 ~ re { print $1 ": " $4 }')
if [ -z "$pgref" ]; then ok "src/core references no PostgreSQL symbol (ereport, palloc, SPI, ...)"
else notok "src/core references no PostgreSQL symbol" "$pgref"; fi

# 6: no SQL-function file is called by another file
sqlf=$(echo "$ARROWS" | awk -F'\t' '$4 ~ /\/funcs_[^\/]*\.o$/ { print $3 " uses " $5 " of " $4 }')
if [ -z "$sqlf" ]; then ok "no SQL-function file (src/pg/*/funcs_*.c) is called by another file"
else notok "no SQL-function file (src/pg/*/funcs_*.c) is called by another file" "$sqlf"; fi

# the picture, for the reader (folder -> folders it uses)
echo "$ARROWS" | awk -F'\t' '$1 != $2 && $1 != "" && !s[$1, $2]++ { u[$1] = u[$1] " " $2 } END { for (f in u) print "# " f " ->" u[f] }' | sort
echo "1..$n"
exit $failed
