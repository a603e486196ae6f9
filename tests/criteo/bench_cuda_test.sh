#!/bin/sh
# criteo_bench's CUDA suite (tests/bench/criteo_bench.cpp --cuda) end to end on a few thousand
# synthetic rows, UTF-8 and binary: it checks the CUDA outputs against the CPU backend's (exit 3
# when they differ) and then runs every timed row once. CTest runs it with the benchmark built for
# the emulated GPU (tests/cuda/CMakeLists.txt); any build's criteo_bench with a GPU works too.
# A criteo_bench that skips (exit 77: no CUDA device) fails the test: the emulated one must run.
#
# Usage: bench_cuda_test.sh CRITEO_BENCH GEN_CRITEO DLPREP SCRATCH
set -eu
bench=$1 gen=$2 dlprep=$3 scratch=$4
rm -rf "$scratch"
mkdir -p "$scratch"
"$gen" 3000 1 > "$scratch/rows.tsv"
"$dlprep" -q criteo-preprocess --device cpu --output-format none --no-vocab \
  --emit-binary "$scratch/rows.bin" "$scratch/rows.tsv" -o "$scratch/emit"
rc=0
"$bench" --cuda --input "$scratch/rows.tsv" --bin "$scratch/rows.bin" --modulus 5000 \
  --repeats 1 --e2e-repeats 1 --scratch "$scratch/runs" > "$scratch/table.txt" || rc=$?
cat "$scratch/table.txt"
[ "$rc" -eq 0 ] || { echo "bench_cuda_test: criteo_bench exited $rc" >&2; exit 1; }
# Both inputs timed: the binary rows and UTF-8 each have their rows in the table.
for input in binary utf-8; do
  grep -q "^$input " "$scratch/table.txt" ||
    { echo "bench_cuda_test: no $input rows in the table" >&2; exit 1; }
done
rm -rf "$scratch"
