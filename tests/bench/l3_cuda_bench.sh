#!/usr/bin/env bash
# The GPU session of issue 4, run on the device machine from the repository root (the runbook is
# tests/bench/l3_cuda_bench.md): build the CUDA targets with the machine's own cmake/nvcc/g++
# and what carry/ brought (tests/bench/make_l3_cuda_carry.sh), run the CUDA tests, run
# compute-sanitizer on a quick subset, then benchmark on the carried photo subset, with nvJPEG
# through torchvision in the same run. Logs, JSON reports and a summary go to $OUT (at most 8
# files, what a device call brings back: STEP.log per step, summary.txt, bench-SET.json,
# sanitize-TOOL.log).
#
# Usage: tests/bench/l3_cuda_bench.sh STEP...    STEP: env build test sanitize bench all
#   (all = env build test bench sanitize; each step logs to $OUT/STEP.log and goes on after a
#   failure; the exit status is the worst step's)
# Environment: OUT (default build-gpu/out), BUILD (build-gpu), BUILD_TARGETS (dlprep
# l3_decode_cuda_test l3_test l3_decode_cuda_bench), ARCH (90: the H100; "80;90" for both),
# BATCH (1,16,64,256), REPEATS (10), SAN_TIMEOUT (130 s per sanitizer tool: the four fit one
# 10-minute call), SAN_TOOLS (memcheck racecheck synccheck initcheck); for a dry run of the
# script without a GPU: DEVICE=cpu (the bench step's --device), SET (carry/l3bench).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
OUT=${OUT:-$root/build-gpu/out}
BUILD=${BUILD:-build-gpu}
ARCH=${ARCH:-90}
BATCH=${BATCH:-1,16,64,256}
REPEATS=${REPEATS:-10}
SAN_TIMEOUT=${SAN_TIMEOUT:-130}
DEVICE=${DEVICE:-cuda}
DEPS=$root/carry/deps
SET=${SET:-$root/carry/l3bench}
mkdir -p "$OUT"
status=0
note() { echo "== $*" | tee -a "$OUT/summary.txt"; }

step_env() {
  note "env: $(date -u +%FT%TZ), $(uname -m), $(nproc) cores"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 |
    sed 's/^/   gpu: /' | tee -a "$OUT/summary.txt"
  for tool in nvcc cmake ninja g++ compute-sanitizer python3 pkg-config; do
    printf '   %-18s %s\n' "$tool" "$(command -v $tool || echo missing)"
  done | tee -a "$OUT/summary.txt"
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  for h in /usr/include/zlib.h /usr/include/png.h /usr/local/cuda/include/nvjpeg.h; do
    printf '   %-40s %s\n' "$h" "$([[ -f $h ]] && echo present || echo missing)"
  done | tee -a "$OUT/summary.txt"
  python3 -c 'import torch, torchvision; print("   torch", torch.__version__, "torchvision",
      torchvision.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tee -a "$OUT/summary.txt"
  [[ -d $DEPS && -d $SET ]] || { note "carry/ is missing: name carry in the run call"; return 1; }
}

step_build() {
  local nvcc args
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DDLPREP_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc"
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DCMAKE_CUDA_FLAGS=-lineinfo
        -DDLPREP_WITH_PNG=ON -DDLPREP_WITH_WEBP=OFF -DDLPREP_WITH_XRT=OFF
        -DDLPREP_WITH_NVJPEG=AUTO
        -DCLI11_DIR="$DEPS/share/cmake/CLI11" -Dnlohmann_json_DIR="$DEPS/share/cmake/nlohmann_json"
        -DDOCTEST_INCLUDE_DIR="$DEPS/include")
  # What the machine lacks comes from carry/deps (Debian 12's static libraries link here too).
  [[ -f /usr/include/zlib.h ]] ||
    args+=(-DZLIB_INCLUDE_DIR="$DEPS/include" -DZLIB_LIBRARY="$DEPS/lib/libz.a")
  [[ -f /usr/include/png.h ]] ||
    args+=(-DPNG_PNG_INCLUDE_DIR="$DEPS/include" -DPNG_LIBRARY="$DEPS/lib/libpng16.a")
  # No pkg-config: a stand-in that knows no package (CMake requires the program; JPEG and WebP,
  # found through it, are then simply absent: nothing the GPU work needs).
  if ! command -v pkg-config >/dev/null; then
    mkdir -p "$BUILD/no-pkg-config"
    printf '#!/bin/sh\n[ "$1" = --version ] && echo 0.29.2 && exit 0\nexit 1\n' \
      >"$BUILD/no-pkg-config/pkg-config"
    chmod +x "$BUILD/no-pkg-config/pkg-config"
    args+=(-DPKG_CONFIG_EXECUTABLE="$root/$BUILD/no-pkg-config/pkg-config")
  fi
  cmake -S . -B "$BUILD" "${args[@]}" || return 1
  local targets=(${BUILD_TARGETS:-dlprep l3_decode_cuda_test l3_test l3_decode_cuda_bench})
  if ! cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}"; then
    # nvJPEG is the only part never compiled before this session: retry without it.
    if grep -q 'DLPREP_HAVE_NVJPEG:INTERNAL=ON\|NVJPEG_LIBRARY:FILEPATH=/' "$BUILD/CMakeCache.txt"; then
      note "build failed with nvJPEG: retrying with -DDLPREP_WITH_NVJPEG=OFF (torchvision measures it)"
      cmake -S . -B "$BUILD" -DDLPREP_WITH_NVJPEG=OFF || return 1
      cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" || return 1
    else
      return 1
    fi
  fi
  "$BUILD/dlprep" --version | tee -a "$OUT/summary.txt"
}

step_test() {
  local rc=0
  "$BUILD/tests/cuda/l3_decode_cuda_test" || rc=$?
  note "l3_decode_cuda_test (full suite on the GPU): exit $rc"
  local rc_unit=0
  "$BUILD/tests/unit/l3/l3_test" 2>&1 | tail -4 || rc_unit=$?
  note "l3_test (unit, on this machine's CPU): exit $rc_unit"
  # The CLI's device paths: --device cuda must decode bit-exactly and bench must run.
  local rc_cli=0
  ctest --test-dir "$BUILD" -R 'cli/l3/(decode-device|bench-device|bench-bad-args)' \
    --output-on-failure || rc_cli=$?
  note "cli device tests: exit $rc_cli"
  ((rc == 0 && rc_unit == 0 && rc_cli == 0))
}

step_sanitize() {
  local cs tool rc worst=0
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  local test_bin="$BUILD/tests/cuda/l3_decode_cuda_test"
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
    local extra=()
    [[ $tool == memcheck ]] && extra=(--leak-check full)
    [[ $tool == racecheck ]] && extra=(--racecheck-report all)
    rc=0
    timeout "$SAN_TIMEOUT" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 1 \
      "$test_bin" --quick >"$OUT/sanitize-$tool.log" 2>&1 || rc=$?
    tail -4 "$OUT/sanitize-$tool.log"
    note "compute-sanitizer $tool (--quick): exit $rc$([[ $rc == 124 ]] && echo ' (timed out)')"
    ((rc > worst)) && worst=$rc
  done
  return $((worst != 0))
}

bench_set() {  # bench_set NAME: dlprep l3 bench --device $DEVICE on $SET/NAME
  local name=$1 rc=0
  "$BUILD/dlprep" --json l3 bench --device "$DEVICE" "$SET/$name" --jpeg "$SET/${name}_jpeg" \
    --batch "$BATCH" --repeats "$REPEATS" >"$OUT/bench-$name.json" || rc=$?
  note "dlprep l3 bench --device $DEVICE $name: exit $rc"
  python3 - "$OUT/bench-$name.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("   (no report:", e, ")"); sys.exit(0)
c = d["copy"]
print(f"   {d['device']}")
print(f"   {d['images']} images, ratio {d['ratio']:.3f}; H2D pinned {c['h2d_pinned_gb_per_s']:.1f} "
      f"pageable {c['h2d_pageable_gb_per_s']:.1f} D2H {c['d2h_pinned_gb_per_s']:.1f} "
      f"D2D {c['d2d_gb_per_s']:.0f} GB/s; ceiling {d['ceiling_gb_per_s']:.1f} GB/s")
l = d["latency"]
print(f"   batch-1 latency: kernel {l['kernel']['median_seconds']*1e3:.3f} ms, pinned "
      f"{l['pinned']['median_seconds']*1e3:.3f} ms, host {l['host']['median_seconds']*1e3:.3f} ms")
print(f"   {'batch':>5} {'layout':>8} {'res img/s':>10} {'res GB/s':>9} {'e2e img/s':>10} "
      f"{'e2e GB/s':>9} {'%ceil':>6} {'page GB/s':>9} {'ok':>3}")
for r in d["rows"]:
    e2e = "pinned_gb_per_s" in r
    print(f"   {r['batch']:>5} {r['layout']:>8} {r['resident_images_per_s']:>10.0f} "
          f"{r['resident_gb_per_s']:>9.1f} "
          f"{(r['pinned_images_per_s'] if e2e else 0):>10.0f} {(r['pinned_gb_per_s'] if e2e else 0):>9.1f} "
          f"{(100*r['pinned_fraction_of_ceiling'] if e2e else 0):>6.0f} "
          f"{(r['pageable_gb_per_s'] if e2e else 0):>9.1f} {'yes' if r['verified'] else 'no':>3}")
h = d.get("host", {})
if h:
    print(f"   host {h['threads']} threads: png {h['png_images_per_s']:.0f} img/s "
          f"({h['png_gb_per_s']:.2f} GB/s), l3 {h['l3_images_per_s']:.0f} img/s")
for j in d["nvjpeg"]["rows"]:
    print(f"   {j['decoder']} batch {j['batch']}: {j['images_per_s']:.0f} img/s "
          f"{j['gb_per_s']:.1f} GB/s (PSNR {j['min_psnr_db']:.1f})")
if d["nvjpeg"]["note"]:
    print("   nvjpeg note:", d["nvjpeg"]["note"])
print("   targets:", json.dumps(d["targets"]))
PY
  local rc_tv=0
  # (its table goes to the summary; no JSON file: a call brings back at most 8 files)
  python3 tests/bench/nvjpeg_torchvision.py "$SET/${name}_jpeg" --batch "$BATCH" \
    --repeats "$REPEATS" 2>&1 | tee -a "$OUT/summary.txt" || rc_tv=$?
  note "nvjpeg via torchvision $name: exit $rc_tv"
  ((rc == 0 && rc_tv == 0))
}

step_bench() {
  local rc=0
  bench_set fhd || rc=1
  bench_set native || rc=1
  return $rc
}

run_step() {
  local step=$1 rc=0
  echo "######## $step" >&2
  "step_$step" > >(tee "$OUT/$step.log") 2>&1 || rc=$?
  sleep 0.2  # let tee finish
  note "step $step: exit $rc"
  ((rc != 0)) && status=1
  return 0
}

[[ $# -gt 0 ]] || { sed -n '2,16p' "$0"; exit 2; }
for step in "$@"; do
  case $step in
    env | build | test | sanitize | bench) run_step "$step" ;;
    all) for s in env build test bench sanitize; do run_step "$s"; done ;;
    *) echo "l3_cuda_bench.sh: unknown step '$step'" >&2; exit 2 ;;
  esac
done
echo "######## summary ($OUT/summary.txt)"
cat "$OUT/summary.txt"
exit $status
