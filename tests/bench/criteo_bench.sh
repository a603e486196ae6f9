#!/bin/sh
# The Criteo benchmark of issue 5 (BENCHMARKS.md "Criteo"; results in CRITEO-RESULTS.md).
# Generates synthetic day files from a seed into tests/bench/cache/criteo/ (git-ignored), warms
# the page cache, then runs criteo_bench, which times in one process the memchr scan ceiling, the
# straightforward C++ baseline and dlprep (UTF-8, gzip, binary), checking every output first.
#
# Usage: tests/bench/criteo_bench.sh [BUILD_DIR] [ROWS]     (defaults: build-criteo, 1000000)
#   CRITEO_RSS=1 also measures peak RSS for 10M and 20M rows with modulus 1,000,000 (~5 GB disk).
#   CRITEO_SCRATCH=DIR: where the outputs go. Default: a folder in /dev/shm (tmpfs), so that the
#   outputs, like the input, stay in memory: dlprep flushes each day's files to storage before the
#   checkpoint that names them, which on a disk bounds the run by the disk's speed (1M rows:
#   160 MB of arrays, 0.15 s on the build VM), a cost of the disk, not of the preprocessing.
set -eu
B=${1:-build-criteo}
ROWS=${2:-1000000}
C=tests/bench/cache/criteo
mkdir -p "$C"
if [ -z "${CRITEO_SCRATCH:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  CRITEO_SCRATCH=/dev/shm/dlprep-criteo-bench-$$
  trap 'rm -rf "$CRITEO_SCRATCH"' EXIT
fi
S=${CRITEO_SCRATCH:-$C/scratch}
T=$C/criteo_$ROWS.tsv
[ -s "$T" ] || "$B/gen_criteo" "$ROWS" 1 > "$T"
[ -s "$T.gz" ] || gzip -6 -c "$T" > "$T.gz"
[ -s "$C/criteo_$ROWS.bin" ] ||
  "$B/dlprep" -q criteo-preprocess --output-format none --no-vocab --emit-binary "$C/criteo_$ROWS.bin" "$T" -o "$C/emit_tmp"
cat "$T" "$T.gz" "$C/criteo_$ROWS.bin" > /dev/null   # page cache
echo "== $(date -u +%FT%TZ) $(uname -m) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc=$(nproc) commit=$(git rev-parse --short HEAD 2>/dev/null)"
echo "== load before: $(uptime); outputs in $S"
"$B/criteo_bench" --input "$T" --gz "$T.gz" --bin "$C/criteo_$ROWS.bin" --modulus 5000 --repeats 3 --scratch "$S"
echo "== load: $(uptime)"
"$B/criteo_bench" --input "$T" --modulus 1000000 --repeats 3 --scratch "$S"
echo "== load after: $(uptime)"
if [ "${CRITEO_RSS:-0}" = 1 ]; then
  for n in 10000000 20000000; do
    [ -s "$C/criteo_$n.tsv" ] || "$B/gen_criteo" "$n" 2 > "$C/criteo_$n.tsv"
    "$B/criteo_bench" --input "$C/criteo_$n.tsv" --modulus 1000000 --rss-only --scratch "$C/scratch"
  done
fi
