#!/bin/sh
# The CUDA Criteo benchmark of issue 5 (BENCHMARKS.md "Criteo": from the input in pinned host
# memory to the finished arrays back in host memory, both passes; writing them to disk reported
# apart). For the lent GPU machine: tests/bench/criteo_cuda_bench.md has the exact device calls.
# Generates the synthetic days from a seed into tests/bench/cache/criteo/ (git-ignored), their
# binary rows with the CPU backend, then runs `criteo_bench --cuda`, which checks every output of
# the CUDA backend against the CPU backend's before it times anything.
#
# Usage: tests/bench/criteo_cuda_bench.sh BUILD_DIR [ROWS...]     (default ROWS: 1000000 10000000)
#   REPEATS=N (default 3) timed runs of the target row (pinned memory -> host arrays) after one
#   warm-up; E2E_REPEATS=N (default 3) of the others (writes, end to end); MODULI (default
#   "5000 1000000"); CRITEO_GZ=1 also times gzip input. criteo_bench prints its progress on
#   stderr.
set -eu
B=$1
shift
ROWS=${*:-1000000 10000000}
C=tests/bench/cache/criteo
mkdir -p "$C"
echo "== $(date -u +%FT%TZ) gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo none)"
echo "== cpu:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc=$(nproc) commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
for n in $ROWS; do
  T=$C/criteo_$n.tsv
  [ -s "$T" ] || "$B/gen_criteo" "$n" 1 > "$T"
  [ -s "$C/criteo_$n.bin" ] ||
    "$B/dlprep" -q criteo-preprocess --device cpu --output-format none --no-vocab \
      --emit-binary "$C/criteo_$n.bin" "$T" -o "$C/emit_tmp"
  GZ=""
  if [ "${CRITEO_GZ:-0}" = 1 ]; then
    [ -s "$T.gz" ] || gzip -1 -c "$T" > "$T.gz"
    GZ="--gz $T.gz"
  fi
  cat "$T" "$C/criteo_$n.bin" > /dev/null   # page cache
  for m in ${MODULI:-5000 1000000}; do
    echo "== load: $(uptime)"
    # shellcheck disable=SC2086
    "$B/criteo_bench" --cuda --input "$T" --bin "$C/criteo_$n.bin" $GZ --modulus "$m" \
      --repeats "${REPEATS:-3}" --e2e-repeats "${E2E_REPEATS:-3}" --scratch "$C/scratch_cuda"
  done
done
rm -rf "$C/scratch_cuda" "$C/emit_tmp"
