#!/usr/bin/env bash
# Build the model-blob fuzzer with libFuzzer + ASan/UBSan and run it.
#   test/fuzz/run.sh [seconds=60]
# Seeds the corpus with valid blobs of every architecture (written by
# test/fuzz/make_seeds.c) so mutations start from deep inside the format.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
out=test/fuzz/bin
mkdir -p "$out" "$out/corpus"
srcs=$(ls src/core/*.c)
clang -g -O1 -fopenmp -fsanitize=fuzzer,address,undefined -Isrc/core \
    -o "$out/fuzz_model_blob" test/fuzz/fuzz_model_blob.c $srcs \
    -lopenblas -lmetis -lomp -lpthread -lm -ldl 2>/dev/null ||
clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
    -o "$out/fuzz_model_blob" test/fuzz/fuzz_model_blob.c $srcs \
    -lopenblas -lmetis -lpthread -lm -ldl
cc -std=gnu11 -O1 -fopenmp -Isrc/core -o "$out/make_seeds" test/fuzz/make_seeds.c $srcs \
    -lopenblas -lmetis -lgomp -lpthread -lm -ldl
"$out/make_seeds" "$out/corpus"
export OMP_NUM_THREADS=1
"$out/fuzz_model_blob" -max_total_time="$secs" -max_len=8192 -print_final_stats=1 "$out/corpus"
