#!/usr/bin/env bash
# Build the libFuzzer targets with ASan/UBSan and run each one.
#   test/fuzz/run.sh [seconds per target=60] [target...]
# Targets: fuzz_model_blob (model blob deserialisation), fuzz_graph_attach
# (the graph region validator), fuzz_store_file (a graph store file read as a
# restart reads it: header, metadata, payload, then the region), fuzz_safetensors
# (gnn.import_model's reader).  Each corpus is seeded with valid inputs
# (test/fuzz/make_seeds.c, make_graph_seeds.c) so mutations start from deep
# inside the format.  Exits non-zero when a target finds a crash.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
targets=${*:-fuzz_model_blob fuzz_graph_attach fuzz_store_file fuzz_safetensors}
out=test/fuzz/bin
srcs=$(ls src/core/*/*.c)
mkdir -p "$out"
cc -std=gnu11 -O1 -fopenmp -Isrc/core -o "$out/make_seeds" test/fuzz/make_seeds.c $srcs \
    -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
cc -std=gnu11 -O1 -fopenmp -Isrc/core -o "$out/make_graph_seeds" test/fuzz/make_graph_seeds.c $srcs \
    -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
export OMP_NUM_THREADS=1
for t in $targets; do
  clang -g -O1 -fopenmp -fsanitize=fuzzer,address,undefined -Isrc/core \
      -o "$out/$t" "test/fuzz/$t.c" $srcs -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lomp -lpthread -lm -ldl 2>/dev/null ||
  clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
      -o "$out/$t" "test/fuzz/$t.c" $srcs -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lpthread -lm -ldl
  mkdir -p "$out/corpus-$t"
  case $t in
    fuzz_model_blob) "$out/make_seeds" "$out/corpus-$t" ;;
    fuzz_graph_attach) "$out/make_graph_seeds" "$out/corpus-$t" ;;
    fuzz_store_file) "$out/make_graph_seeds" "$out/corpus-$t" --store ;;
    fuzz_safetensors) "$out/make_seeds" "$out/corpus-$t" --safetensors ;;
  esac
  echo "== $t: ${secs}s"
  (cd "$out" && "./$t" -max_total_time="$secs" -max_len=16384 -print_final_stats=1 "corpus-$t" 2>&1 |
     grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY|Done|crash-' ) || { echo "$t FAILED"; exit 1; }
done
