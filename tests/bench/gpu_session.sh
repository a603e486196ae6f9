#!/usr/bin/env bash
# The GPU session of issues 4 (the L3 CUDA decoder) and 5 (the Criteo CUDA backend), run on the
# lent device machine from the repository root. One build serves both issues, and every step runs
# under what is left of the call's time, so that a 10-minute device call holds as many steps as
# fit and always ends with its summary. The plan of calls: tests/bench/GPU-SESSION.md.
#
# Usage: tests/bench/gpu_session.sh STEP...
#   env              the machine: GPU, driver, tools, which system headers exist, torch
#   build            configure build-gpu (Release, CUDA for sm_$ARCH, PNG, no JPEG/WebP, nvJPEG when
#                    found; carry/deps for what the machine lacks) and build every target below
#   l3-test          l3_decode_cuda_test (bit-exact against the CPU reference), l3_test, the
#                    CLI's device cases, and the fuzz corpus replayed on the GPU against the CPU
#   criteo-test      criteo_preprocess_cuda_test (every output byte against the CPU backend), the
#                    Criteo unit and CLI tests, the NumPy differential test forced onto CUDA, and
#                    the fuzz corpus replayed on the GPU against the CPU
#   l3-bench         dlprep l3 bench --device cuda on carry/l3bench/{fhd,native}, then nvJPEG
#                    through torchvision on the same pictures as JPEG
#   criteo-bench     criteo_cuda_bench.sh: $ROWS synthetic rows, moduli 5,000 and 1,000,000
#   l3-sanitize      compute-sanitizer memcheck, racecheck, synccheck, initcheck on the L3 --quick,
#                    then memcheck on the fuzz corpus (hostile files)
#   criteo-sanitize  the same on the Criteo suite's --quick and its fuzz corpus
#   l3-tune          the L3 kernel rebuilt with each DLPREP_L3_CUDA_MIN_BLOCKS of $L3_MIN_BLOCKS
#                    and benchmarked beside the default build (not part of bench)
#   test, bench, sanitize   both issues' steps of that kind, L3 first
# Steps after build make the build first when it is missing (a machine that went cold).
# What comes back in $OUT: summary.txt (one line per step and result, the benchmark tables),
# logs.tar.gz (every step's full log, sanitizer logs, bench JSON) and bench-fhd.json,
# bench-native.json (schema dlprep.l3-device-bench/1, man/dlprep-l3.1).
# Environment: OUT (build-gpu/out), BUDGET (seconds for the whole call: 570), ARCH (90), BATCH
#   (1,16,64,256), REPEATS (10), ROWS ("1000000 10000000"), SAN_TIMEOUT (seconds per sanitizer
#   tool: 130), SAN_TOOLS (memcheck racecheck synccheck initcheck), L3_MIN_BLOCKS ("8 6"),
#   TUNE_BATCH (64,256); a dry run without a GPU:
#   DEVICE=cpu (l3-bench's --device) and SET (carry/l3bench).
# shellcheck disable=SC2317  # the step functions are called by name: step_"$2"
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit
# nvcc, compute-sanitizer and cuobjdump live in /usr/local/cuda/bin, not always on PATH.
export PATH=$PATH:/usr/local/cuda/bin
export OUT=${OUT:-$root/build-gpu/out} B=build-gpu DEPS=$root/carry/deps
export ARCH=${ARCH:-90} BATCH=${BATCH:-1,16,64,256} REPEATS=${REPEATS:-10}
export ROWS=${ROWS:-1000000 10000000} SAN_TIMEOUT=${SAN_TIMEOUT:-130} DEVICE=${DEVICE:-cuda}
export SET=${SET:-$root/carry/l3bench} LOGS=$OUT/logs
export L3_MIN_BLOCKS=${L3_MIN_BLOCKS:-8 6} TUNE_BATCH=${TUNE_BATCH:-64,256}
TARGETS=(dlprep l3_decode_cuda_test l3_test criteo_preprocess_cuda_test tabular_test
         criteo_bench gen_criteo fuzz_l3_decode_cuda_replay fuzz_criteo_cuda_replay)
# The CLI tests call /usr/bin/python3 (standard library only): on a machine whose only Python is
# elsewhere, point that name at it (the machine is bare and given back after the session).
[[ -e /usr/bin/python3 ]] || ! command -v python3 >/dev/null || ln -s "$(command -v python3)" /usr/bin/python3
# A python3 with NumPy: the machine's own (PyTorch's) where /usr/bin/python3 has none.
PYTHON=/usr/bin/python3
$PYTHON -c 'import numpy' 2>/dev/null || PYTHON=$(command -v python3 || echo /usr/bin/python3)
export PYTHON

note() { echo "== $*" | tee -a "$OUT/summary.txt"; }
seconds_left() { echo $((DEADLINE - $(date +%s))); }

step_env() {
  note "env: $(date -u +%FT%TZ), $(uname -m), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 |
    sed 's/^/   gpu: /' | tee -a "$OUT/summary.txt"
  for tool in nvcc cmake ninja g++ compute-sanitizer ncu python3 pkg-config; do
    printf '   %-18s %s\n' "$tool" "$(command -v "$tool" || echo missing)"
  done | tee -a "$OUT/summary.txt"
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  for h in /usr/include/zlib.h /usr/include/png.h /usr/include/isa-l/igzip_lib.h \
           /usr/local/cuda/include/nvjpeg.h; do
    printf '   %-40s %s\n' "$h" "$([[ -f $h ]] && echo present || echo missing)"
  done | tee -a "$OUT/summary.txt"
  echo "   python with NumPy: $PYTHON" | tee -a "$OUT/summary.txt"
  python3 -c 'import torch, torchvision; print("   torch", torch.__version__, "torchvision",
      torchvision.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tee -a "$OUT/summary.txt"
  [[ -d $DEPS && -d $SET ]] || { note "carry/ is missing: name carry in the run call"; return 1; }
}

configure() {  # configure [EXTRA CMAKE ARGS...]
  # carry/deps comes first on the prefix path: the same header-only libraries and static
  # zlib/libpng (Debian 12's; they link on the newer system) whatever the machine has.
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DDLPREP_WITH_CUDA=ON
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DCMAKE_CUDA_FLAGS=-lineinfo
    -DDLPREP_WITH_PNG=ON -DDLPREP_WITH_JPEG=OFF -DDLPREP_WITH_WEBP=OFF -DDLPREP_WITH_XRT=OFF
    -DCMAKE_PREFIX_PATH="$DEPS")
  # CMake requires a pkg-config; the stand-in knows no package.
  command -v pkg-config >/dev/null || args+=(-DPKG_CONFIG_EXECUTABLE="$DEPS/bin/pkg-config")
  cmake -S . -B "$B" "${args[@]}" "$@" >"$LOGS/configure-${B##*/}.log" 2>&1 ||
    { tail -30 "$LOGS/configure-${B##*/}.log"; return 1; }
  grep -E "CUDA|nvJPEG|gzip|PNG|ZLIB" "$LOGS/configure-${B##*/}.log"
}

step_build() {
  configure -DDLPREP_WITH_NVJPEG=AUTO || return 1
  if ! ninja -C "$B" -j"$(nproc)" "${TARGETS[@]}" >"$LOGS/build.log" 2>&1; then
    grep -B2 -A12 -m3 "error" "$LOGS/build.log"
    # nvJPEG is the one part never compiled against the real nvjpeg.h: retry without it
    # (torchvision then gives the nvJPEG figure).
    grep -q 'DLPREP_HAVE_NVJPEG:INTERNAL=ON\|NVJPEG_LIBRARY:FILEPATH=/' "$B/CMakeCache.txt" ||
      return 1
    note "build failed with nvJPEG: retrying with -DDLPREP_WITH_NVJPEG=OFF"
    configure -DDLPREP_WITH_NVJPEG=OFF || return 1
    ninja -C "$B" -j"$(nproc)" "${TARGETS[@]}" >>"$LOGS/build.log" 2>&1 ||
      { grep -B2 -A12 -m3 "error" "$LOGS/build.log"; return 1; }
  fi
  note "built: $("$B/dlprep" --version), $(grep -c 'warning' "$LOGS/build.log") warnings"
  # Kernel resources: registers, spills, shared memory (every stack frame should be 0 bytes).
  cuobjdump --dump-resource-usage "$B"/cuda/CMakeFiles/dlprep_cuda.dir/*/*.o \
    >"$LOGS/resources.log" 2>&1 || true
  grep -E "Function|REG:" "$LOGS/resources.log" | sed 's/^ *//; s/^Function //' | paste - - |
    grep -v -i "cub\|thrust" | sed 's/:\t/\t/' | c++filt | sed 's/(anonymous namespace):://; s/(.*)//' |
    cut -c1-150 | tee -a "$OUT/summary.txt" || true  # (cuobjdump may be missing: not a failure)
}

ensure_built() {
  local t
  for t in "$B/dlprep" "$B/tests/cuda/l3_decode_cuda_test" "$B/tests/cuda/criteo_preprocess_cuda_test" \
           "$B/criteo_bench" "$B/tests/fuzz/fuzz_criteo_cuda_replay"; do
    [[ -x $t ]] || { step_build; return; }
  done
}

replay_corpus() {  # replay_corpus TARGET CORPUS: a fuzz corpus through the GPU and the CPU backends
  local rc=0
  "$B/tests/fuzz/fuzz_$1_replay" "tests/fuzz/corpus/$2" || rc=$?
  note "fuzz_$1_replay (tests/fuzz/corpus/$2 on the GPU, against the CPU): exit $rc"
  return "$rc"
}

step_l3-test() {
  ensure_built || return 1
  local rc=0 rc_unit=0 rc_cli=0
  "$B/tests/cuda/l3_decode_cuda_test" || rc=$?
  note "l3_decode_cuda_test (the full suite on the GPU): exit $rc"
  "$B/tests/unit/l3/l3_test" 2>&1 | tail -4 || rc_unit=$?
  note "l3_test: exit $rc_unit"
  ctest --test-dir "$B" -R '^cli/l3/(decode-device|bench-device|bench-bad-args)$' \
    --output-on-failure || rc_cli=$?
  note "cli/l3 device tests: exit $rc_cli"
  replay_corpus l3_decode_cuda l3 && ((rc == 0 && rc_unit == 0 && rc_cli == 0))
}

step_criteo-test() {
  ensure_built || return 1
  local rc=0 rc_ctest=0 rc_diff=0
  "$B/tests/cuda/criteo_preprocess_cuda_test" || rc=$?
  note "criteo_preprocess_cuda_test (the full suite on the GPU): exit $rc"
  ctest --test-dir "$B" --output-on-failure \
    -R '^(tabular_test|criteo_cli|criteo_differential|criteo_preprocess_cuda_test_on_cpu)$' ||
    rc_ctest=$?
  note "ctest tabular_test criteo_cli criteo_differential criteo_preprocess_cuda_test_on_cpu: exit $rc_ctest"
  # The independent NumPy reference against the CLI forced onto the GPU.
  DLPREP_FORCE_DEVICE=cuda sh tests/criteo/differential_test.sh "$B/dlprep" "$root" \
    "$B/scratch_differential_cuda" || rc_diff=$?
  note "NumPy differential test with DLPREP_FORCE_DEVICE=cuda: exit $rc_diff (77: skipped, no NumPy or no GPU)"
  replay_corpus criteo_cuda criteo_tsv && ((rc == 0 && rc_ctest == 0 && (rc_diff == 0 || rc_diff == 77)))
}

l3_bench_set() {  # l3_bench_set NAME: dlprep l3 bench on $SET/NAME, then torchvision's nvJPEG
  local name=$1 rc=0 rc_tv=0
  "$B/dlprep" --json l3 bench --device "$DEVICE" "$SET/$name" --jpeg "$SET/${name}_jpeg" \
    --batch "$BATCH" --repeats "$REPEATS" >"$LOGS/bench-$name.json" || rc=$?
  note "dlprep l3 bench --device $DEVICE $name: exit $rc"
  "$PYTHON" tests/bench/l3_bench_summary.py "$LOGS/bench-$name.json" | tee -a "$OUT/summary.txt"
  python3 tests/bench/nvjpeg_torchvision.py "$SET/${name}_jpeg" --batch "$BATCH" \
    --repeats "$REPEATS" 2>&1 | tee -a "$OUT/summary.txt" || rc_tv=$?
  note "nvJPEG through torchvision, $name: exit $rc_tv"
  ((rc == 0 && rc_tv == 0))
}

step_l3-bench() {
  ensure_built || return 1
  local rc=0
  l3_bench_set fhd || rc=1
  l3_bench_set native || rc=1
  return "$rc"
}

# The decode kernel rebuilt with each DLPREP_L3_CUDA_MIN_BLOCKS of $L3_MIN_BLOCKS (fewer registers,
# more blocks per SM, some spills: l3_cuda_bench.md section 5), each benchmarked on the FHD set
# beside the default build in the same step, device-resident and end to end.
step_l3-tune() {
  ensure_built || return 1
  local n rc=0 builds=("$B")
  for n in $L3_MIN_BLOCKS; do
    if B=$B-mb$n configure -DDLPREP_WITH_NVJPEG=OFF \
         -DCMAKE_CUDA_FLAGS="-lineinfo -DDLPREP_L3_CUDA_MIN_BLOCKS=$n" >/dev/null &&
       ninja -C "$B-mb$n" -j"$(nproc)" dlprep >"$LOGS/build-mb$n.log" 2>&1; then
      builds+=("$B-mb$n")
    else
      note "l3-tune: the build with DLPREP_L3_CUDA_MIN_BLOCKS=$n failed ($LOGS/build-mb$n.log)"
      rc=1
    fi
  done
  local b
  for b in "${builds[@]}"; do
    "$b/dlprep" --json l3 bench --device "$DEVICE" "$SET/fhd" --batch "$TUNE_BATCH" \
      --layout nhwc-u8,nchw-f16 --repeats "$REPEATS" >"$LOGS/tune-${b##*/}.json" || rc=1
    note "l3-tune: $b"
    "$PYTHON" tests/bench/l3_bench_summary.py "$LOGS/tune-${b##*/}.json" | grep -E "batch|u8|f16" |
      tee -a "$OUT/summary.txt"
  done
  return "$rc"
}

step_criteo-bench() {
  ensure_built || return 1
  # The tables are the issue's figures: all of them go into the summary.
  # shellcheck disable=SC2086
  sh tests/bench/criteo_cuda_bench.sh "$B" $ROWS 2>&1 | tee -a "$OUT/summary.txt"
  local rc=${PIPESTATUS[0]}
  note "criteo_cuda_bench.sh $ROWS: exit $rc (3: the CUDA outputs differ from the CPU's)"
  return "$rc"
}

sanitize() {  # sanitize NAME COMMAND...: each tool of SAN_TOOLS on COMMAND, within the budget
  local name=$1 tool rc worst=0 cap
  shift
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
    local extra=()
    [[ $tool == memcheck ]] && extra=(--leak-check full)
    [[ $tool == racecheck ]] && extra=(--racecheck-report all)
    cap=$(seconds_left)
    ((cap < 20)) && { note "compute-sanitizer $tool on $name: not run, out of time"; worst=1; continue; }
    ((cap > SAN_TIMEOUT)) && cap=$SAN_TIMEOUT
    rc=0
    timeout "$cap" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 1 "$@" \
      >"$LOGS/sanitize-$name-$tool.log" 2>&1 || rc=$?
    tail -3 "$LOGS/sanitize-$name-$tool.log"
    note "compute-sanitizer $tool on $name: exit $rc$([[ $rc == 124 ]] && echo " (stopped at ${cap} s)"); $(grep -m1 'ERROR SUMMARY' "$LOGS/sanitize-$name-$tool.log")"
    ((rc != 0)) && worst=1
  done
  return "$worst"
}

wants_memcheck() { [[ " ${SAN_TOOLS:-memcheck} " == *" memcheck "* ]]; }

# sanitize_suite NAME SUITE REPLAY CORPUS: the CUDA suite's --quick under the four tools, then
# the fuzz corpus (hostile inputs) replayed under memcheck.
sanitize_suite() {
  ensure_built || return 1
  local rc=0
  sanitize "$1" "$B/tests/cuda/$2" --quick || rc=1
  wants_memcheck || return "$rc"
  SAN_TOOLS=memcheck sanitize "$1-corpus" "$B/tests/fuzz/$3" "tests/fuzz/corpus/$4" || rc=1
  return "$rc"
}

step_l3-sanitize() { sanitize_suite l3 l3_decode_cuda_test fuzz_l3_decode_cuda_replay l3; }
step_criteo-sanitize() {
  sanitize_suite criteo criteo_preprocess_cuda_test fuzz_criteo_cuda_replay criteo_tsv
}

# One step in a child under the time left, so that the call always reaches its summary.
run_step() {
  local step=$1 rc=0 left started
  left=$(seconds_left)
  started=$(date +%s)
  if ((left < 30)); then
    note "step $step: not run, out of time (BUDGET=$BUDGET)"
    status=1
    return
  fi
  echo "######## $step ($left s left)"
  timeout -k 5 "$left" bash "$0" --one "$step" > >(tee "$LOGS/step-$step.log") 2>&1 || rc=$?
  sleep 0.2  # let tee finish
  note "step $step: exit $rc$([[ $rc == 124 ]] && echo ' (stopped: out of time)'), $(($(date +%s) - started)) s, $(seconds_left) s left"
  ((rc != 0)) && status=1
}

if [[ ${1:-} == --one ]]; then
  "step_$2"
  exit
fi
[[ $# -gt 0 ]] || { sed -n '7,33p' "$0"; exit 2; }
steps=()
for s in "$@"; do
  case $s in
    env | build | l3-test | criteo-test | l3-bench | criteo-bench | l3-sanitize | criteo-sanitize | \
      l3-tune)
      steps+=("$s") ;;
    test | bench | sanitize) steps+=("l3-$s" "criteo-$s") ;;
    *) echo "gpu_session.sh: unknown step '$s'" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT" "$LOGS"
export BUDGET=${BUDGET:-570}
# 15 s are kept back for packing the logs.
export DEADLINE=$(($(date +%s) + BUDGET - 15))
status=0
for s in "${steps[@]}"; do run_step "$s"; done
# A device call brings back at most 8 files: the logs travel as one archive.
cp "$LOGS"/bench-*.json "$OUT/" 2>/dev/null
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
echo "######## summary ($OUT/summary.txt)"
cat "$OUT/summary.txt"
exit $status
