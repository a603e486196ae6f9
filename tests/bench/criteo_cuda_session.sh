#!/bin/sh
# The steps of a GPU session for the CUDA Criteo backend (issue 5), so that each device `run` call
# is one short command (tests/bench/criteo_cuda_bench.md). Logs go to $OUT (or ./criteo-cuda-logs).
#
# Usage: tests/bench/criteo_cuda_session.sh STEP...
#   build     configure build-gpu (Release, CUDA on, codecs off, the carried prefix) and build
#             dlprep, criteo_bench, gen_criteo, tabular_test, criteo_preprocess_cuda_test
#   test      the CUDA test (every output byte against the CPU backend), then ctest for
#             tabular/criteo (CPU unit tests, CLI cases, the NumPy differential test), then the
#             NumPy differential test with DLPREP_FORCE_DEVICE=cuda
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck and initcheck on the --quick suite
#   bench     tests/bench/criteo_cuda_bench.sh on 1M and 10M synthetic rows ($ROWS to change)
# Every step builds first when build-gpu is missing (a machine that went cold).
set -u
# nvcc, compute-sanitizer and cuobjdump live in /usr/local/cuda/bin, not always on PATH.
PATH=$PATH:/usr/local/cuda/bin
export PATH
OUT=${OUT:-criteo-cuda-logs}
mkdir -p "$OUT"
B=build-gpu
P=$PWD/carry/criteo-deps
status=0

step_build() {
  {
    echo "== $(date -u +%FT%TZ) $(nvidia-smi -L 2>&1 | head -1)"
    nvcc --version 2>&1 | tail -1
    cmake --version | head -1
    for h in zlib.h png.h turbojpeg.h isa-l/igzip_lib.h CLI/CLI.hpp nlohmann/json.hpp; do
      [ -e "/usr/include/$h" ] && echo "system has $h" || echo "system lacks $h"
    done
    command -v pkg-config || echo "no pkg-config: configuring with the carried stand-in"
  } > "$OUT/machine.log" 2>&1
  cat "$OUT/machine.log"
  PKG=""
  command -v pkg-config > /dev/null || PKG="-DPKG_CONFIG_EXECUTABLE=$P/bin/pkg-config"
  # shellcheck disable=SC2086
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLPREP_WITH_CUDA=ON \
    -DDLPREP_WITH_PNG=OFF -DDLPREP_WITH_JPEG=OFF -DDLPREP_WITH_WEBP=OFF \
    -DCMAKE_PREFIX_PATH="$P" -DCMAKE_CUDA_FLAGS=-lineinfo $PKG > "$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; return 1; }
  grep -E "CUDA:|gzip" "$OUT/configure.log"
  ninja -C "$B" -j"$(nproc)" dlprep criteo_bench gen_criteo tabular_test \
    criteo_preprocess_cuda_test > "$OUT/build.log" 2>&1 || { grep -B2 -A12 -m3 "error" "$OUT/build.log"; return 1; }
  echo "built: $(grep -c 'warning' "$OUT/build.log") warnings (build.log)"
  # Kernel resources: registers, spills, shared memory (stack frames should be 0 bytes).
  cuobjdump --dump-resource-usage "$B"/cuda/CMakeFiles/dlprep_cuda.dir/tabular/*.o \
    > "$OUT/resources.log" 2>&1 || true
  grep -E "Function|REG:" "$OUT/resources.log" | sed 's/^ *//; s/^Function //' | paste - - |
    grep -v -i "cub\|thrust" | sed 's/:\t/\t/' | c++filt |
    sed 's/(anonymous namespace):://; s/(.*)//' | cut -c1-150 | head -30
}

ensure_built() {
  [ -x "$B/tests/cuda/criteo_preprocess_cuda_test" ] && [ -x "$B/criteo_bench" ] || step_build
}

step_test() {
  ensure_built || return 1
  "$B/tests/cuda/criteo_preprocess_cuda_test" > "$OUT/cuda_test.log" 2>&1
  rc=$?
  tail -70 "$OUT/cuda_test.log"
  echo "criteo_preprocess_cuda_test: exit $rc (0 pass, 1 fail, 77 skipped)"
  [ $rc -eq 0 ] || status=1
  # (the CUDA test itself just ran above)
  ctest --test-dir "$B" -R 'tabular|criteo' -E '^criteo_preprocess_cuda_test$' \
    --output-on-failure > "$OUT/ctest.log" 2>&1 || status=1
  tail -25 "$OUT/ctest.log"
  # The independent NumPy reference against the CLI forced onto the GPU.
  DLPREP_FORCE_DEVICE=cuda sh tests/criteo/differential_test.sh "$B/dlprep" "$PWD" \
    "$B/scratch_differential_cuda" > "$OUT/differential_cuda.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
  echo "differential test on cuda: exit $rc (77: no NumPy for /usr/bin/python3)"
  cat "$OUT/differential_cuda.log"
}

step_sanitize() {
  ensure_built || return 1
  T="$B/tests/cuda/criteo_preprocess_cuda_test"
  for tool in memcheck racecheck synccheck initcheck; do
    extra=""
    [ $tool = memcheck ] && extra="--leak-check full"
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool $extra --error-exitcode 1 "$T" --quick \
      > "$OUT/sanitize_$tool.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc; $(grep -c '^=========' "$OUT/sanitize_$tool.log") report lines; $(tail -1 "$OUT/sanitize_$tool.log")"
    [ $rc -eq 0 ] || { grep -m20 '^=========' "$OUT/sanitize_$tool.log"; status=1; }
  done
}

step_bench() {
  ensure_built || return 1
  # shellcheck disable=SC2086
  sh tests/bench/criteo_cuda_bench.sh "$B" ${ROWS:-1000000 10000000} > "$OUT/bench.log" 2>&1 ||
    status=1
  cat "$OUT/bench.log"
}

for s in "$@"; do
  echo "===== $s"
  case $s in
    build) step_build || status=1 ;;
    test) step_test || status=1 ;;
    sanitize) step_sanitize || status=1 ;;
    bench) step_bench || status=1 ;;
    *) echo "unknown step $s"; status=2 ;;
  esac
done
exit $status
