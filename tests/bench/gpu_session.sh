#!/usr/bin/env bash
# The GPU session of issues 4 (the L3 CUDA decoder) and 5 (the Criteo CUDA backend), run on the
# lent device machine from the repository root. The binaries come prebuilt in carry/prebuilt
# (made on the build machine by make_gpu_carry.sh) and are built here only when they do not match
# the sources; every step runs under its own cap and what is left of the call's time, so that a
# device call holds as many steps as fit and always ends with its summary. The plan of calls for
# a 15-minute lease: tests/bench/GPU-SESSION.md.
#
# Usage: tests/bench/gpu_session.sh STEP...
#   env              the machine: GPU, driver, tools, which system headers exist, torch
#   build            the binaries: carry/prebuilt when it was built from these sources and runs
#                    here, else configure build-gpu (Release, CUDA for sm_$ARCH, PNG, no JPEG/WebP/
#                    ISA-L, nvJPEG when found; carry/deps for what the machine lacks) and build;
#                    then the kernels' resources (registers, spills, stack) from cuobjdump
#   l3-test          l3_decode_cuda_test (bit-exact against the CPU reference), the CLI's device
#                    cases, the Python module's batches (CUDA against the CPU, the device tensor
#                    through PyTorch), and the fuzz corpus replayed on the GPU against the CPU
#   criteo-test      criteo_preprocess_cuda_test (every output byte against the CPU backend), the
#                    Criteo CLI test, the NumPy differential test forced onto CUDA, and the fuzz
#                    corpus replayed on the GPU against the CPU
#   l3-bench         dlprep l3 bench --device cuda on carry/l3bench/{fhd,native}, then nvJPEG
#                    through torchvision on the same pictures as JPEG; then python_gpu_bench.py
#                    (dlprep_l3: a call per batch against decode_batches) on fhd
#   criteo-bench     criteo_cuda_bench.sh: $ROWS synthetic rows, each modulus of $MODULI; binary
#                    rows first, the target row $REPEATS times, the others $E2E_REPEATS
#   l3-sanitize      compute-sanitizer on the L3 suite's --quick (memcheck, racecheck), memcheck on
#                    the fuzz corpus (hostile files), then synccheck and initcheck if SAN_TOOLS
#                    names them
#   criteo-sanitize  the same on the Criteo suite's --quick and its fuzz corpus, but racecheck on
#                    one CLI run (samples and a generated day): the suite does not fit its cap
#   l3-profile       Nsight Compute on the decode kernel (FHD, batch 64, nhwc-u8): the largest
#                    launch's throughput, occupancy, warp stalls, rules, and its source lines and
#                    SASS by instructions executed and by warp stall samples (the default build)
#   criteo-profile   Nsight Compute on dlprep's kernels (the first launches of each) in a CUDA
#                    criteo-preprocess run: per kernel the median time, SM, memory and DRAM
#                    throughput, occupancy
#   l3-tune          the decode kernel's tuning builds, $L3_VARIANTS (prebuilt, or built here),
#                    each checked by the L3 suite on the GPU, then benchmarked beside the
#                    default build; then memcheck and racecheck on each one's suite
#   test, bench, sanitize, profile   both issues' steps of that kind, L3 first
# Steps after build make the binaries first when they are missing (a machine that went cold).
# What comes back in $OUT (build-gpu-out when unset): summary.txt (one line per step and
# result, the benchmark tables), logs.tar.gz (every step's full log, sanitizer and profiler logs,
# bench JSON) and bench-fhd.json, bench-native.json (schema dlprep.l3-device-bench/1,
# man/dlprep-l3.1).
# Environment: BUDGET (seconds for the whole call: 420), ARCH (90), BATCH (1,16,64,256),
#   REPEATS (10), E2E_REPEATS (3), ROWS (10000000), MODULI (5000), SAN_TIMEOUT (seconds per
#   sanitizer tool: 100), SAN_TOOLS (memcheck racecheck; also synccheck initcheck), L3_VARIANTS
#   (NAME:DEFINITION[,...] each: "upl:DLPREP_L3_CUDA_UNROLLED_PLANES=1
#   wpl:DLPREP_L3_CUDA_WORD_PLANES=1 swp:DLPREP_L3_CUDA_SUBWARP_PATCHES=1"; also any one of
#   the four paths =0, e.g. the previous default "old:DLPREP_L3_CUDA_WORD_CHECKSUM=0,
#   DLPREP_L3_CUDA_LAYOUT_KERNELS=0,DLPREP_L3_CUDA_WARP_PATCHES=0,DLPREP_L3_CUDA_ROW_CODES=0",
#   and DLPREP_L3_CUDA_PIXELS_PER_THREAD=1|4), TUNE_BATCH
#   (64,256), FROM_SOURCE=1 (build here even
#   when carry/prebuilt matches); a dry run without a GPU: DEVICE=cpu (l3-bench's --device) and
#   SET (carry/l3bench).
# The build machine runs the step `prebuild` (make_gpu_carry.sh, with PREBUILD_DIR): the build
# and the tune builds as the device machine would make them, packed into PREBUILD_DIR.
# shellcheck disable=SC2317  # the step functions are called by name: step_"$2"
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit
# nvcc, compute-sanitizer and cuobjdump live in /usr/local/cuda/bin, not always on PATH.
export PATH=$PATH:/usr/local/cuda/bin
export OUT=${OUT:-$root/build-gpu-out} B=build-gpu DEPS=$root/carry/deps
export ARCH=${ARCH:-90} BATCH=${BATCH:-1,16,64,256} REPEATS=${REPEATS:-10}
export ROWS=${ROWS:-10000000} MODULI=${MODULI:-5000} SAN_TIMEOUT=${SAN_TIMEOUT:-100}
export DEVICE=${DEVICE:-cuda} SET=${SET:-$root/carry/l3bench} LOGS=$OUT/logs
# The default kernel has the four paths of decode_kernel.hpp on (2026-11-29: 249-259 GB/s against
# 200-207 for all four off). The two leads on the plane-bit extraction (30% of the stall
# samples): upl (the plane loop unrolled per width), wpl (the planes a word at a time, 64
# registers); and swp (half a warp per patch of up to 32 pixels), which only the set with
# 32-pixel patches can show (l3-tune times every build on both sets; its quarter warp per patch
# of up to 16 pixels is checked by the suites alone: no set has such patches).
export L3_VARIANTS=${L3_VARIANTS:-upl:DLPREP_L3_CUDA_UNROLLED_PLANES=1 \
wpl:DLPREP_L3_CUDA_WORD_PLANES=1 swp:DLPREP_L3_CUDA_SUBWARP_PATCHES=1} \
  TUNE_BATCH=${TUNE_BATCH:-64,256}
TARGETS=(dlprep l3_decode_cuda_test criteo_preprocess_cuda_test criteo_bench gen_criteo
         fuzz_l3_decode_cuda_replay fuzz_criteo_cuda_replay dlprep_l3_shared)
# The Python module and its library (lib/capi), which the tar of step_prebuild names apart.
PYTHON_MODULE=(python/dlprep_l3/libdlprep_l3.so python/dlprep_l3/__init__.py)
# The prebuilt binaries were built from a copy of the tree at this path; here it is made a link
# to this checkout, so that the paths compiled into the tests (sample data, golden files) and
# written in the CTest files lead to the same files.
PREBUILT_SRC=/tmp/dlprep-gpu
PREBUILT=$root/carry/prebuilt
# Each step's cap in seconds (and never past the call's budget): a step that runs long is
# stopped (exit 124) and the next one still runs.
declare -A CAP=([env]=30 [build]=300 [l3-test]=90 [criteo-test]=120 [l3-bench]=180
  [criteo-bench]=170 [l3-sanitize]=270 [criteo-sanitize]=200 [l3-profile]=90
  [criteo-profile]=75 [l3-tune]=270 [prebuild]=3600)
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
  for tool in nvcc cmake ninja g++ compute-sanitizer ncu cuobjdump python3 pkg-config; do
    printf '   %-18s %s\n' "$tool" "$(command -v "$tool" || echo missing)"
  done | tee -a "$OUT/summary.txt"
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  for h in /usr/include/zlib.h /usr/include/png.h /usr/local/cuda/include/nvjpeg.h; do
    printf '   %-40s %s\n' "$h" "$([[ -f $h ]] && echo present || echo missing)"
  done | tee -a "$OUT/summary.txt"
  echo "   python with NumPy: $PYTHON" | tee -a "$OUT/summary.txt"
  python3 -c 'import torch, torchvision; print("   torch", torch.__version__, "torchvision",
      torchvision.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tee -a "$OUT/summary.txt"
  [[ -f $PREBUILT/BUILT ]] && note "carry/prebuilt: $(cat "$PREBUILT/BUILT")"
  [[ -d $DEPS && -d $SET ]] || { note "carry/ is missing: name carry in the run call"; return 1; }
}

configure() {  # configure [EXTRA CMAKE ARGS...]
  # carry/deps comes first on the prefix path: the same header-only libraries and static
  # zlib/libpng (Debian 12's; they link on the newer system) whatever the machine has. No shared
  # library beyond the C and C++ runtimes, so that a build runs on either machine.
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DDLPREP_WITH_CUDA=ON
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DCMAKE_CUDA_FLAGS=-lineinfo
    -DDLPREP_WITH_PNG=ON -DDLPREP_WITH_JPEG=OFF -DDLPREP_WITH_WEBP=OFF -DDLPREP_WITH_ISAL=OFF
    -DDLPREP_WITH_XRT=OFF -DCMAKE_PREFIX_PATH="$DEPS")
  # CMake requires a pkg-config; the stand-in knows no package.
  command -v pkg-config >/dev/null || args+=(-DPKG_CONFIG_EXECUTABLE="$DEPS/bin/pkg-config")
  cmake -S . -B "$B" "${args[@]}" "$@" >"$LOGS/configure-${B##*/}.log" 2>&1 ||
    { tail -30 "$LOGS/configure-${B##*/}.log"; return 1; }
  grep -E "^--   [A-Z]+:" "$LOGS/configure-${B##*/}.log"
}

build_from_source() {  # build_from_source NVJPEG(AUTO|OFF): configure build-gpu, build TARGETS
  configure -DDLPREP_WITH_NVJPEG="$1" || return 1
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
  note "built here: $("$B/dlprep" --version), $(grep -c 'warning' "$LOGS/build.log") warnings"
}

# build_tune_variant NAME:DEF[,DEF]: dlprep and the L3 CUDA suite with -DDEF... in $B-NAME, with
# the device code for ARCH alone (no PTX to compile or carry: ARCH must be the session's GPU).
build_tune_variant() {
  local name=${1%%:*} defs=${1#*:}
  B=$B-$name configure -DDLPREP_WITH_NVJPEG=OFF -DCMAKE_CUDA_FLAGS="-lineinfo -D${defs//,/ -D}" \
    -DCMAKE_CUDA_ARCHITECTURES="${ARCH//;/-real;}-real" >/dev/null &&
    ninja -C "$B-$name" -j"$(nproc)" dlprep l3_decode_cuda_test >"$LOGS/build-$name.log" 2>&1
}

source_fingerprint() {  # what the binaries are made from: every compiled or CMake file
  find CMakeLists.txt lib cuda tools tests -path tests/bench/cache -prune -o -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \
       -o -name '*.inl' -o -name CMakeLists.txt -o -name '*.cmake' \) -print |
    LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
}

# carry/prebuilt into build-gpu (and the tune builds into build-gpu-NAME), when it was built from
# these sources and runs here. A fresh machine only: an existing build-gpu is left as it is.
install_prebuilt() {
  [[ -z ${FROM_SOURCE:-} && -f $PREBUILT/FINGERPRINT && ! -e $B ]] || return 1
  local want have
  want=$(cat "$PREBUILT/FINGERPRINT")
  have=$(source_fingerprint)
  if [[ $want != "$have" ]]; then
    note "carry/prebuilt was built from other sources ($want, these are $have): building here"
    return 1
  fi
  if [[ -e $PREBUILT_SRC && ! -L $PREBUILT_SRC ]]; then
    note "$PREBUILT_SRC is a directory here, not a link: building here"
    return 1
  fi
  ln -sfn "$root" "$PREBUILT_SRC"
  # GNU tar needs the xz program for -J; Python's tarfile does not.
  tar -xJf "$PREBUILT/binaries.tar.xz" 2>/dev/null || python3 -c 'import sys, tarfile
tarfile.open(sys.argv[1]).extractall()' "$PREBUILT/binaries.tar.xz" || return 1
  if ! "$B/dlprep" --version >/dev/null 2>"$LOGS/prebuilt.log"; then
    note "the prebuilt dlprep does not run here ($(head -1 "$LOGS/prebuilt.log")): building here"
    local v
    rm -rf "$B"
    for v in $L3_VARIANTS; do rm -rf "$B-${v%%:*}"; done
    return 1
  fi
  note "binaries: carry/prebuilt, $("$B/dlprep" --version)"
}

step_build() {
  install_prebuilt || build_from_source AUTO || return 1
  # Kernel resources: registers, spills, shared memory (every stack frame should be 0 bytes).
  cuobjdump --dump-resource-usage "$B/dlprep" >"$LOGS/resources.log" 2>&1 || true
  grep -E "Function|REG:" "$LOGS/resources.log" | sed 's/^ *//; s/^Function //' | paste - - |
    grep -v -i "cub\|thrust" | sed 's/:\t/\t/' | c++filt | sed 's/(anonymous namespace):://; s/(.*)//' |
    cut -c1-150 | tee -a "$OUT/summary.txt" || true  # (cuobjdump may be missing: not a failure)
}

ensure_built() {
  local t
  for t in "$B/dlprep" "$B/tests/cuda/l3_decode_cuda_test" "$B/tests/cuda/criteo_preprocess_cuda_test" \
           "$B/criteo_bench" "$B/tests/fuzz/fuzz_criteo_cuda_replay" "${PYTHON_MODULE[@]/#/$B/}"; do
    [[ -f $t ]] || { step_build; return; }
  done
}

# The build machine's part (make_gpu_carry.sh runs it in a copy of the tree at $PREBUILT_SRC):
# the device machine's build and tune builds, packed into $PREBUILD_DIR with the CTest files and
# the sources' fingerprint.
step_prebuild() {
  [[ $root == "$PREBUILT_SRC" ]] || { note "prebuild: run it in $PREBUILT_SRC"; return 1; }
  build_from_source OFF || return 1
  local v t dest=$PREBUILD_DIR
  for v in $L3_VARIANTS; do
    build_tune_variant "$v" || return 1
    # Host symbols only (the kernels keep theirs and their line table): the carry's 64 MiB.
    strip "$B-${v%%:*}/dlprep" "$B-${v%%:*}/tests/cuda/l3_decode_cuda_test" || return 1
  done
  rm -rf "$dest"
  mkdir -p "$dest"
  # xz -9e: an eighth of the size, which the 64 MiB a call carries needs (its 64 MiB dictionary
  # holds the whole archive, so the four dlprep binaries, nearly alike, cost little more than one;
  # the default -6 made 8.7 MB of 65 on 2026-11-30, -9e 3.9).
  (find "$B" -name CTestTestfile.cmake &&
    for t in "${TARGETS[@]}"; do find "$B" -name "$t" -type f -perm -u+x; done &&
    for t in "${PYTHON_MODULE[@]}"; do echo "$B/$t"; done &&
    for v in $L3_VARIANTS; do
      echo "$B-${v%%:*}/dlprep"
      echo "$B-${v%%:*}/tests/cuda/l3_decode_cuda_test"
    done) | XZ_OPT=-9e tar -cJf "$dest/binaries.tar.xz" -T -
  source_fingerprint >"$dest/FINGERPRINT"
  echo "built $(date -u +%FT%TZ) on $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release), \
$(g++ --version | head -1), nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), \
sm_$ARCH, sources $(cat "$dest/FINGERPRINT")" >"$dest/BUILT"
  note "prebuilt: $(du -sh "$dest" | cut -f1) in $dest"
}

replay_corpus() {  # replay_corpus TARGET CORPUS: a fuzz corpus through the GPU and the CPU backends
  local rc=0
  "$B/tests/fuzz/fuzz_$1_replay" "tests/fuzz/corpus/$2" || rc=$?
  note "fuzz_$1_replay (tests/fuzz/corpus/$2 on the GPU, against the CPU): exit $rc"
  return "$rc"
}

step_l3-test() {
  ensure_built || return 1
  local rc=0 rc_cli=0
  "$B/tests/cuda/l3_decode_cuda_test" || rc=$?
  note "l3_decode_cuda_test (the full suite on the GPU): exit $rc"
  ctest --test-dir "$B" -R '^cli/l3/(decode-device|bench-device|bench-bad-args)$' \
    --output-on-failure || rc_cli=$?
  note "cli/l3 device tests: exit $rc_cli"
  # The Python module's batches: CUDA against the CPU, and the device tensor read through
  # torch.as_tensor where this Python has PyTorch (the test says which).
  local rc_py=0
  DLPREP=$B/dlprep SAMPLE_DATA=sample_data SCRATCH=$OUT/python-scratch PYTHONPATH=$B/python \
    PYTHONDONTWRITEBYTECODE=1 "$PYTHON" tests/python/test_dlprep_l3.py -v Batches || rc_py=$?
  note "python dlprep_l3 batches on the GPU: exit $rc_py"
  replay_corpus l3_decode_cuda l3 && ((rc == 0 && rc_cli == 0 && rc_py == 0))
}

step_criteo-test() {
  ensure_built || return 1
  local rc=0 rc_ctest=0 rc_diff=0
  "$B/tests/cuda/criteo_preprocess_cuda_test" || rc=$?
  note "criteo_preprocess_cuda_test (the full suite on the GPU): exit $rc"
  ctest --test-dir "$B" --output-on-failure -R '^criteo_cli$' || rc_ctest=$?
  note "ctest criteo_cli (its device_cuda case on the GPU): exit $rc_ctest"
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
  local rc=0 rc_py=0
  l3_bench_set fhd || rc=1
  l3_bench_set native || rc=1
  # From Python: a call per batch against the overlapped decode_batches, into reused tensors;
  # then with a 3 ms step per batch (about a batch's decode), as a trainer that waits for its step.
  local step
  for step in 0 3; do
    PYTHONPATH=$B/python PYTHONDONTWRITEBYTECODE=1 "$PYTHON" tests/bench/python_gpu_bench.py \
      "$SET/fhd" --batch 64 --repeats 5 --step-ms "$step" 2>&1 | tee -a "$OUT/summary.txt" ||
      rc_py=$?
  done
  note "python_gpu_bench fhd: exit $rc_py"
  ((rc == 0 && rc_py == 0))
}

# The decode kernel's tuning builds (l3_cuda_bench.md section 5: each turns off some of the
# default's DLPREP_L3_CUDA_WORD_CHECKSUM, the checksum a word at a time;
# DLPREP_L3_CUDA_LAYOUT_KERNELS, a kernel per output layout; DLPREP_L3_CUDA_WARP_PATCHES, a warp
# per patch; DLPREP_L3_CUDA_ROW_CODES, the rows' predictor codes unpacked in pass 1; or turns on
# a path not yet timed: DLPREP_L3_CUDA_UNROLLED_PLANES, WORD_PLANES, SUBWARP_PATCHES), prebuilt
# or built here, each run through the L3 suite on the GPU, then benchmarked on the FHD set (and
# on it with 32-pixel patches) beside the default build in the
# same step, device-resident and end to end (the benchmark checks its output first); last,
# compute-sanitizer on each one's suite.
# The FHD set encoded again with 32-pixel patches (the encoder's choice up to 1280 x 720, where a
# warp per patch leaves half of each warp idle), made here from the carried L3 files, once:
# carry/ has no room for another set.
SET32=$B-sets/fhd32
make_set32() {
  [[ -d $SET32 ]] && return 0
  local ppm=$B-sets/ppm
  rm -rf "$ppm" "$SET32.tmp"
  "$B/dlprep" -q l3 decode "$SET/fhd" -o "$ppm/" --to ppm &&
    "$B/dlprep" -q l3 encode --patch 32 "$ppm/" -o "$SET32.tmp/" && mv "$SET32.tmp" "$SET32"
  local rc=$?
  rm -rf "$ppm"
  note "l3-tune: the FHD set with 32-pixel patches in $SET32: exit $rc"
  return "$rc"
}

step_l3-tune() {
  ensure_built || return 1
  local v rc=0 builds=("$B")
  make_set32 || rc=1
  for v in $L3_VARIANTS; do
    if [[ -x $B-${v%%:*}/tests/cuda/l3_decode_cuda_test ]] || build_tune_variant "$v"; then
      builds+=("$B-${v%%:*}")
    else
      note "l3-tune: the build $v failed ($LOGS/build-${v%%:*}.log)"
      rc=1
    fi
  done
  local b rc_test
  for b in "${builds[@]}"; do
    if [[ $b != "$B" ]]; then  # the default build's suite ran in l3-test
      rc_test=0
      "$b/tests/cuda/l3_decode_cuda_test" >"$LOGS/tune-test-${b##*/}.log" 2>&1 || rc_test=$?
      note "l3-tune: $b/tests/cuda/l3_decode_cuda_test: exit $rc_test ($(tail -1 \
        "$LOGS/tune-test-${b##*/}.log"))"
      ((rc_test == 0 || rc_test == 77)) || rc=1
    fi
    "$b/dlprep" --json l3 bench --device "$DEVICE" "$SET/fhd" --batch "$TUNE_BATCH" \
      --layout nhwc-u8,nchw-f16 --repeats "$REPEATS" >"$LOGS/tune-${b##*/}.json" || rc=1
    note "l3-tune: $b"
    "$PYTHON" tests/bench/l3_bench_summary.py "$LOGS/tune-${b##*/}.json" | grep -E "batch|u8|f16" |
      tee -a "$OUT/summary.txt"
    [[ -d $SET32 ]] || continue
    # (one batch size, TUNE_BATCH's last, to stay within the step's cap)
    "$b/dlprep" --json l3 bench --device "$DEVICE" "$SET32" --batch "${TUNE_BATCH##*,}" \
      --layout nhwc-u8 --repeats "$REPEATS" >"$LOGS/tune32-${b##*/}.json" || rc=1
    note "l3-tune: $b, the FHD set with 32-pixel patches"
    "$PYTHON" tests/bench/l3_bench_summary.py "$LOGS/tune32-${b##*/}.json" | grep -E "batch|u8" |
      tee -a "$OUT/summary.txt"
  done
  # Then memcheck and racecheck on each tune build's suite (a few seconds each), so that a build
  # that wins can become the default with that evidence from the same session.
  for b in "${builds[@]:1}"; do
    sanitize "tune-${b##*/}" "memcheck racecheck" "$b/tests/cuda/l3_decode_cuda_test" --quick ||
      rc=1
  done
  return "$rc"
}

step_criteo-bench() {
  ensure_built || return 1
  # The tables are the issue's figures: all of them go into the summary.
  # shellcheck disable=SC2086
  MODULI=$MODULI sh tests/bench/criteo_cuda_bench.sh "$B" $ROWS 2>&1 | tee -a "$OUT/summary.txt"
  local rc=${PIPESTATUS[0]}
  note "criteo_cuda_bench.sh $ROWS (moduli $MODULI): exit $rc (3: the CUDA outputs differ from the CPU's)"
  return "$rc"
}

# profile NAME SUMMARY-ARGS -- COMMAND...: Nsight Compute's sections on COMMAND's kernels
# (the array NCU_ARGS picks them), its report kept in the logs, what matters printed into the
# summary.
profile() {
  local name=$1 summary=() rc=0
  shift
  while [[ $1 != -- ]]; do summary+=("$1"); shift; done
  shift
  command -v ncu >/dev/null || { note "$name-profile: ncu is missing"; return 1; }
  ncu -f -o "$LOGS/ncu-$name" "${NCU_ARGS[@]}" "$@" >"$LOGS/ncu-$name.log" 2>&1 || rc=$?
  grep "==ERROR==\|==WARNING==" "$LOGS/ncu-$name.log" | head -5
  ncu --import "$LOGS/ncu-$name.ncu-rep" --csv --page details >"$LOGS/ncu-$name.csv" 2>&1 || rc=1
  "$PYTHON" tests/bench/ncu_summary.py "$LOGS/ncu-$name.csv" "${summary[@]}" \
    >"$LOGS/ncu-$name.txt" || rc=1
  note "ncu on $name: exit $rc"
  return "$rc"
}

# source_view NAME: the report's source page, each CUDA line with its SASS (SASS alone where this
# ncu refuses the pair), into ncu-NAME-source.csv, and its top lines by instructions executed and
# by warp stall samples into ncu-NAME-source.txt and the summary. Never fails the step.
source_view() {
  local rep=$LOGS/ncu-$1.ncu-rep csv=$LOGS/ncu-$1-source.csv log=$LOGS/ncu-$1-source.log view rc
  [[ -s $rep ]] || return 0
  for view in cuda,sass sass; do
    rc=0
    ncu --import "$rep" --page source --csv --print-source "$view" >"$csv" 2>"$log" || rc=$?
    echo "ncu --page source --print-source $view: exit $rc"
    head -5 "$log"
    grep -q '^"' "$csv" && break
    echo "no CSV; its output began:"
    head -5 "$csv"
  done
  "$PYTHON" tests/bench/ncu_summary.py "$csv" --source >"$LOGS/ncu-$1-source.txt" 2>&1
  note "ncu on $1, source view ($view): the top lines (all in ncu-$1-source.txt)"
  # At most 4 lists of 8 (about 40 lines).
  "$PYTHON" tests/bench/ncu_summary.py "$csv" --source --top 8 2>&1 | tee -a "$OUT/summary.txt"
  return 0
}

step_l3-profile() {
  ensure_built || return 1
  profile_l3 l3 "$B"
}

# profile_l3 NAME BUILD: Nsight Compute on BUILD's decode kernel, FHD batch 64, nhwc-u8.
profile_l3() {
  local name=$1 build=$2 rc=0
  # The first 10 decode launches are the benchmark's batch-1 latency runs (grid 510), then batch
  # 64's (grid 32640): two of those. SourceCounters (per-instruction counts and stall sampling;
  # the binaries carry -lineinfo) and InstructionStats say where the instructions go; the sources
  # travel in the report.
  NCU_ARGS=(-k regex:decode_patches --launch-skip 10 -c 2 --import-source yes
    --section SpeedOfLight --section Occupancy --section LaunchStats
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats
    --section ComputeWorkloadAnalysis --section SourceCounters --section InstructionStats)
  profile "$name" --largest decode_patches -- "$build/dlprep" -q -j 4 l3 bench \
    --device "$DEVICE" "$SET/fhd" --batch 64 --layout nhwc-u8 --repeats 1 || rc=1
  # The summary keeps the launch, the rules and these metrics (ncu_summary prints
  # "  section | name | value unit").
  local keep="Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput"
  keep+="|Executed Ipc Active|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy"
  keep+="|Registers Per Thread|Block Limit [A-Za-z ]+|Warp Cycles Per Issued Instruction"
  keep+="|Eligible Warps Per Scheduler|No Eligible|Issued Warp Per Scheduler|L1/TEX Hit Rate"
  keep+="|L2 Hit Rate|Branch Efficiency|Avg. Divergent Branches|Local Memory Spilling Requests"
  grep -E "^launch|^  grid|^  rule |\| ($keep) \|" "$LOGS/ncu-$name.txt" | tee -a "$OUT/summary.txt"
  source_view "$name"
  return "$rc"
}

step_criteo-profile() {
  ensure_built || return 1
  local input=tests/bench/cache/criteo/criteo_1000000.tsv
  mkdir -p "${input%/*}"
  [[ -s $input ]] || "$B/gen_criteo" 1000000 1 >"$input"
  local run=("$B/dlprep" -q criteo-preprocess --device cuda --preset piper "$input" -o
    "$B/scratch_profile")
  local sections=(--section SpeedOfLight --section Occupancy)
  # dlprep's own kernels only (their names end in _kernel, CUB's in Kernel), the first two
  # launches of each (ncu numbers a kernel's invocations per grid and block shape), at most 60:
  # every stage of both passes, the transform's launches last of all.
  rm -rf "$B/scratch_profile"
  NCU_ARGS=(--kernel-id '::regex:_kernel:^[12]$' -c 60 "${sections[@]}")
  profile criteo --per-kernel -- "${run[@]}"
  local rc=$?
  if [[ ! -s $LOGS/ncu-criteo.ncu-rep ]]; then
    # An ncu that does not take the invocation pattern: the first 60 launches of them.
    mv "$LOGS/ncu-criteo.log" "$LOGS/ncu-criteo-kernel-id.log"
    note "criteo-profile: no report with --kernel-id ($(grep -m1 '==ERROR==' \
      "$LOGS/ncu-criteo-kernel-id.log" || echo "ncu-criteo-kernel-id.log")): the first 60 \
launches of dlprep's kernels instead"
    rm -rf "$B/scratch_profile"
    NCU_ARGS=(-k regex:_kernel -c 60 "${sections[@]}")
    profile criteo --per-kernel -- "${run[@]}"
    rc=$?
  fi
  tee -a "$OUT/summary.txt" <"$LOGS/ncu-criteo.txt"
  return "$rc"
}

sanitize() {  # sanitize NAME TOOLS COMMAND...: each of TOOLS on COMMAND, within the step's time
  local name=$1 tools=$2 tool rc worst=0 cap
  shift 2
  for tool in $tools; do
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

# sanitize_suite NAME SUITE REPLAY CORPUS: memcheck and racecheck on the CUDA suite's --quick
# (what issue 4 asks for; racecheck on the array RACECHECK, NAME COMMAND..., where it is set),
# memcheck on the fuzz corpus (hostile inputs), then synccheck and initcheck, each where
# SAN_TOOLS names it.
sanitize_suite() {
  ensure_built || return 1
  local rc=0 wanted=" ${SAN_TOOLS:-memcheck racecheck} " tool last=""
  local suite=("$B/tests/cuda/$2" --quick)
  local race=("$1" "${suite[@]}")
  [[ -v RACECHECK ]] && race=("${RACECHECK[@]}")
  for tool in synccheck initcheck; do [[ $wanted == *" $tool "* ]] && last+=" $tool"; done
  if [[ $wanted == *" memcheck "* ]]; then sanitize "$1" memcheck "${suite[@]}" || rc=1; fi
  if [[ $wanted == *" racecheck "* ]]; then
    sanitize "${race[0]}" racecheck "${race[@]:1}" || rc=1
  fi
  if [[ $wanted == *" memcheck "* ]]; then
    sanitize "$1-corpus" memcheck "$B/tests/fuzz/$3" "tests/fuzz/corpus/$4" || rc=1
  fi
  sanitize "$1" "$last" "${suite[@]}" || rc=1
  return "$rc"
}

step_l3-sanitize() { sanitize_suite l3 l3_decode_cuda_test fuzz_l3_decode_cuda_replay l3; }
step_criteo-sanitize() {
  ensure_built || return 1
  # Racecheck costs about 9 s per run of the pipeline whatever its size (some 300 launches, CUB's
  # included), so the suite's 36 cases (--tiny's 35 too) cannot finish in a cap. It checks shared
  # memory, which parse_lines_kernel and CUB use: one CLI run covers them and every other kernel,
  # on the samples (edge cases, gzip) and a generated day in 1 MiB chunks, flat and hashed columns.
  local dir=$B/scratch_racecheck modulus
  mkdir -p "$dir"
  [[ -s $dir/day.tsv ]] || "$B/gen_criteo" 20000 1 >"$dir/day.tsv"
  rm -rf "$dir/out"
  modulus=$(printf '5000,0,%.0s' {1..13})
  RACECHECK=(criteo-cli "$B/dlprep" -q criteo-preprocess --device cuda --chunk-mb 1
    --modulus "${modulus%,}" sample_data/criteo/{deepctr_200.tsv,nvtabular_day_0.gz,edge_cases.tsv}
    "$dir/day.tsv" -o "$dir/out")
  sanitize_suite criteo criteo_preprocess_cuda_test fuzz_criteo_cuda_replay criteo_tsv
}

# One step in a child under its cap and the time left, so that the call always reaches its
# summary.
run_step() {
  local step=$1 rc=0 left started cap
  left=$(seconds_left)
  cap=${CAP[$step]}
  ((cap > left)) && cap=$left
  started=$(date +%s)
  if ((cap < 30)); then
    note "step $step: not run, out of time (BUDGET=$BUDGET)"
    status=1
    return
  fi
  echo "######## $step (cap $cap s, $left s left)"
  DEADLINE=$((started + cap)) timeout -k 5 "$cap" bash "$0" --one "$step" \
    > >(tee "$LOGS/step-$step.log") 2>&1 || rc=$?
  sleep 0.2  # let tee finish
  note "step $step: exit $rc$([[ $rc == 124 ]] && echo " (stopped at its cap, $cap s)"), $(($(date +%s) - started)) s, $(seconds_left) s left"
  ((rc != 0)) && status=1
}

if [[ ${1:-} == --one ]]; then
  "step_$2"
  exit
fi
[[ $# -gt 0 ]] || { sed -n '9,/^# shellcheck/{/^# shellcheck/!p;}' "$0"; exit 2; }
steps=()
for s in "$@"; do
  case $s in
    env | build | l3-test | criteo-test | l3-bench | criteo-bench | l3-sanitize | criteo-sanitize | \
      l3-profile | criteo-profile | l3-tune | prebuild)
      steps+=("$s") ;;
    test | bench | sanitize | profile) steps+=("l3-$s" "criteo-$s") ;;
    *) echo "gpu_session.sh: unknown step '$s'" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT" "$LOGS"
export BUDGET=${BUDGET:-420}
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
