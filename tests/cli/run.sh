#!/usr/bin/env bash
# Runs one CLI test case the zstd way (tests/cli-tests there): the case is a small shell script
# run in an empty scratch folder; its exit code, stdout and stderr are compared with the files
# next to it, when they exist:
#   CASE.sh       the script (sources common.sh; `dlprep` is on PATH)
#   CASE.exit     expected exit code (absent: 0)
#   CASE.stdout   expected stdout, exactly (absent: not compared)
#   CASE.stderr   expected stderr, exactly (absent: not compared)
# A case that exits 77 (common.sh's `skip REASON`) is skipped: its reason is printed, and run.sh
# exits 77 unless another case failed.
# Usage: run.sh [--regen] DLPREP SAMPLE_DATA SCRATCH_ROOT CASE.sh...
#   --regen rewrites CASE.exit and the CASE.stdout/CASE.stderr files that already exist from this
#   run's results (after an intended change; review the diff before committing).
set -u
regen=0
if [ "${1:-}" = "--regen" ]; then regen=1; shift; fi
if [ $# -lt 4 ]; then
  echo "usage: $0 [--regen] DLPREP SAMPLE_DATA SCRATCH_ROOT CASE.sh..." >&2
  exit 2
fi
if [ ! -x "$1" ]; then
  echo "$0: $1: no dlprep executable there (build it first)" >&2
  exit 2
fi
dlprep=$(realpath "$1")
sample_data=$(realpath "$2")
scratch_root=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)

status=0
for case_path in "$@"; do
  case_path=$(realpath "$case_path")
  name=${case_path#"$here"/}
  name=${name%.sh}
  base=${case_path%.sh}
  scratch="$scratch_root/$name"
  rm -rf "$scratch"
  mkdir -p "$scratch/bin"
  ln -s "$dlprep" "$scratch/bin/dlprep"
  (
    cd "$scratch" &&
      PATH="$scratch/bin:$PATH" DLPREP="$dlprep" SAMPLE_DATA="$sample_data" CLI_TESTS="$here" \
        LC_ALL=C bash "$case_path" >"$scratch/.stdout" 2>"$scratch/.stderr"
  )
  code=$?
  expected_code=0
  [ -f "$base.exit" ] && expected_code=$(cat "$base.exit")
  failed=0
  if [ $regen = 1 ]; then
    if [ "$code" = 0 ]; then rm -f "$base.exit"; else echo "$code" >"$base.exit"; fi
    [ -f "$base.stdout" ] && cp "$scratch/.stdout" "$base.stdout"
    [ -f "$base.stderr" ] && cp "$scratch/.stderr" "$base.stderr"
    echo "regenerated $name (exit $code)"
    continue
  fi
  if [ "$code" = 77 ] && [ "$expected_code" != 77 ] && [ $regen = 0 ]; then
    echo "skip $name: $(head -c 300 "$scratch/.stderr")"
    [ $status = 0 ] && status=77
    continue
  fi
  if [ "$code" != "$expected_code" ]; then
    echo "FAIL $name: exit code $code, expected $expected_code"
    failed=1
  fi
  for stream in stdout stderr; do
    if [ -f "$base.$stream" ] && ! cmp -s "$base.$stream" "$scratch/.$stream"; then
      echo "FAIL $name: $stream differs from $name.$stream:"
      diff -u "$base.$stream" "$scratch/.$stream" | head -40
      failed=1
    fi
  done
  if [ $failed = 1 ]; then
    echo "--- stderr of $name (scratch: $scratch) ---"
    head -c 4000 "$scratch/.stderr"
    status=1
  else
    echo "ok   $name"
  fi
done
exit $status
