#!/usr/bin/env bash
# The image codec benchmark of issue 2 section 5 on real photos (BENCHMARKS.md): builds the photo
# sets from Debian's wallpaper packages (cached), then runs `dlprep l3 bench` on the FHD set and on
# a subset of the native set, single-threaded and with all cores, prints the tables with the machine
# they were measured on, and saves the JSON reports and tables under $CACHE/results/.
#
# Usage: tests/bench/run_image_bench.sh            (from anywhere; paths are from the repo root)
# Environment (all optional):
#   DLPREP=build/dlprep      the binary to measure; its build's CMakeCache.txt gives the flags
#   CACHE=tests/bench/cache  photo sets and results (git-ignored, never committed)
#   SETS="fhd native"        the sets to run, in order
#   FHD_LIMIT=0              FHD images used (0 = all 47), evenly spaced like NATIVE_LIMIT
#   NATIVE_LIMIT=8           native images used, evenly spaced over the name-sorted set (0 = all 47:
#                            1.6 GB of raw pixels, up to 5120x2880 and 4096x4096, ~20 min per run)
#   CODECS=l3,png,webp,jpeg,l3@patches   codec specs (`dlprep l3 bench --help`); memcpy is added
#   THREADS="1,$(nproc)"     thread counts (threads run over images, a whole image per thread)
#   REPEATS=5                timed runs per measurement, after one warm-up
#   MALLOC_REUSE=1           run dlprep with GLIBC_TUNABLES so that glibc never maps (and unmaps)
#                            a big allocation: the 44 MB output of a native-set decode then reuses
#                            the memory freed by the previous one, as a data loader's buffer pool
#                            would, instead of paying ~11,000 first-touch page faults per image
#                            (glibc maps every allocation over 32 MB afresh). No effect on the FHD
#                            set (6 MB images reuse freed heap memory anyway). 0: glibc defaults.
#   MAX_SECONDS=30           stop repeating a measurement after this many timed seconds (0: never);
#                            slow encoders (WebP lossless, PNG-6) then get fewer runs, at least one
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
DLPREP=${DLPREP:-build/dlprep}
CACHE=${CACHE:-tests/bench/cache}
SETS=${SETS:-fhd native}
NATIVE_LIMIT=${NATIVE_LIMIT:-8}
FHD_LIMIT=${FHD_LIMIT:-0}
CODECS=${CODECS:-l3,png,webp,jpeg,l3@patches}
cores=$(nproc)
THREADS=${THREADS:-1,$cores}
REPEATS=${REPEATS:-5}
MAX_SECONDS=${MAX_SECONDS:-30}
MALLOC_REUSE=${MALLOC_REUSE:-1}
malloc_env=()
[[ $MALLOC_REUSE == 1 ]] && malloc_env=(GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184)
PYTHON=/usr/bin/python3  # Debian's, with python3-pil (make_photo_sets.py)

if [[ ! -x $DLPREP ]]; then
  echo "run_image_bench.sh: $DLPREP not found; build it first (cmake --build build) or set DLPREP" >&2
  exit 2
fi
build_dir=$(cd "$(dirname "$DLPREP")" && pwd)
mkdir -p "$CACHE/results"

# 1. The photo sets (skipped when every image listed in sets.tsv is there).
sets_ok=0
if [[ -s $CACHE/sets.tsv ]]; then
  sets_ok=1
  while IFS=$'\t' read -r name _; do
    for f in "$CACHE/native/$name.png" "$CACHE/fhd/$name.png"; do
      [[ -s $f ]] || sets_ok=0
    done
  done < "$CACHE/sets.tsv"
fi
if [[ $sets_ok == 0 ]]; then
  echo "building the photo sets in $CACHE (apt-get download + dpkg -x, Lanczos resize)..." >&2
  "$PYTHON" tests/bench/make_photo_sets.py "$CACHE" >&2
fi

# 2. The machine and the build, printed with every table (BENCHMARKS.md).
cache_var() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" 2>/dev/null | head -1; }
build_type=$(cache_var CMAKE_BUILD_TYPE)
build_type_uc=$(echo "$build_type" | tr '[:lower:]' '[:upper:]')
cxx=$(cache_var CMAKE_CXX_COMPILER)
cxx_version=$("${cxx:-c++}" --version 2>/dev/null | head -1 || true)
flags="$(cache_var CMAKE_CXX_FLAGS) $(cache_var "CMAKE_CXX_FLAGS_$build_type_uc")"
sanitize=$(cache_var DLPREP_SANITIZE)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# GIT_OPTIONAL_LOCKS=0: never take the index lock (other people commit in this tree meanwhile).
dirty=$(GIT_OPTIONAL_LOCKS=0 git status --porcelain -- lib tools 2>/dev/null | wc -l)
[[ $dirty != 0 ]] && commit="$commit + $dirty uncommitted paths in lib/ or tools/"
# The exact state of the L3 codec measured, committed or not: a hash of its source files.
l3_state=$(cat lib/l3/* 2>/dev/null | sha256sum | cut -c1-16)
l3_changed=$(find lib/l3 -type f -printf '%TY-%Tm-%Td %TH:%TM UTC\n' 2>/dev/null | sort | tail -1)
lscpu_field() { lscpu 2>/dev/null | sed -n "s/^$1: *//p" | head -1; }
cpu="$(lscpu_field 'Model name') (family $(lscpu_field 'CPU family') model $(lscpu_field Model)"
cpu+=" stepping $(lscpu_field Stepping); L2 $(lscpu_field 'L2 cache'), L3 $(lscpu_field 'L3 cache')"
hyper=$(lscpu_field 'Hypervisor vendor')
[[ -n $hyper ]] && cpu+="; $hyper guest"
cpu+="; $(grep -o -w 'avx2\|avx512f\|avx512bw\|avx512vbmi\|gfni' /proc/cpuinfo | sort -u | tr '\n' ' ')"
cpu="${cpu% })"
stamp=$(date -u +%Y%m%dT%H%M%SZ)

machine_header() {
  echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit:   $commit"
  echo "lib/l3:   sources sha256 $l3_state, last changed $l3_changed;" \
    "last commit touching it: $(git log -1 --format='%h %cd' --date=format:'%H:%M' -- lib/l3 2>/dev/null)"
  echo "cpu:      ${cpu:-unknown}, $cores cores ($(uname -m), Linux $(uname -r))"
  echo "compiler: $cxx_version"
  echo "flags:    $build_type:${flags} (sanitizers ${sanitize:-OFF}; $build_dir/CMakeCache.txt)"
  echo "binary:   $DLPREP ($("$DLPREP" --version 2>/dev/null | head -1))"
  echo "l3 isa:   DLPREP_L3_ISA=${DLPREP_L3_ISA:-unset} (unset: the widest kernels the CPU runs, gfni > avx2 > scalar)"
  echo "malloc:   ${malloc_env[*]:-glibc defaults}"
  echo "load:     $(uptime | sed 's/.*load average/load average/') (before the run)"
}

# 3. One set: select its files, run the benchmark with --json, save it and print a table.
run_set() {
  local set=$1 folder files=() note
  case $set in
    fhd) folder=$CACHE/fhd ;;
    native) folder=$CACHE/native ;;
    *) echo "run_image_bench.sh: unknown set '$set' (fhd, native)" >&2; exit 2 ;;
  esac
  mapfile -t all < <(cut -f1 "$CACHE/sets.tsv" | LC_ALL=C sort)
  local n=${#all[@]}
  local limit=$n
  local want=$FHD_LIMIT
  [[ $set == native ]] && want=$NATIVE_LIMIT
  [[ $want -gt 0 && $want -lt $n ]] && limit=$want
  for ((k = 0; k < limit; k++)); do
    files+=("$folder/${all[k * n / limit]}.png")  # evenly spaced: every (n/limit)-th name
  done
  note="all $n images"
  [[ $limit -lt $n ]] && note="$limit of $n images, evenly spaced over the name-sorted set"

  local base=$CACHE/results/$stamp-$set
  {
    echo "== image codec benchmark: $set set ($note) =="
    machine_header
    echo "command:  $DLPREP --json -j $cores l3 bench --codecs $CODECS --threads $THREADS" \
      "--repeats $REPEATS --max-seconds $MAX_SECONDS <${#files[@]} files of $folder>"
  } | tee "$base.txt"
  local start=$SECONDS
  env "${malloc_env[@]}" "$DLPREP" --json -j "$cores" --progress never l3 bench --codecs "$CODECS" --threads "$THREADS" \
    --repeats "$REPEATS" --max-seconds "$MAX_SECONDS" "${files[@]}" > "$base.json" || {
    local rc=$?  # 3: a decode differed from its original (the message above names codec and image)
    echo "run_image_bench.sh: dlprep l3 bench failed (exit $rc) on the $set set" | tee -a "$base.txt" >&2
    exit "$rc"
  }
  echo "load:     $(uptime | sed 's/.*load average/load average/') (after $((SECONDS - start)) s)" \
    | tee -a "$base.txt"
  "$PYTHON" - "$base.json" <<'EOF' | tee -a "$base.txt"
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["rows"]
print(f"set: {r['images']} images, {r['raw_bytes'] / 1e6:.1f} MB of raw pixels; median (and best) of "
      f"up to {r['repeats']} timed runs after {r['warmup']} warm-up; MB = 10^6 bytes of raw pixels")
png = r.get("size_reference") or ""
print()
cpu = "encode_mb_per_cpu_s" in rows[0]  # absent from older dlprep builds
print("| codec | threads | size/raw (agg.) | mean size/raw | size vs PNG-6 agg. / mean / median / worst "
      "| encode MB/s median (best) | decode MB/s median (best) "
      + ("| encode / decode MB per CPU-s " if cpu else "") + "| runs enc/dec | checked |")
print("|---|---|---|---|---|---|---|" + ("---|" if cpu else "") + "---|---|")
def f(x, d=1):
    return f"{x:,.{d}f}" if x else "-"
for w in rows:
    name = w["codec"] + ("@" + w["parallel"] if w["parallel"] != "images" else "")
    name += "" if w["lossless"] else " (lossy)"
    vs = "-"
    if png:
        vs = (f"{w['size_vs_png']:.3f} / {w['mean_size_vs_png']:.3f} / {w['median_size_vs_png']:.3f} / "
              f"{w['worst_size_vs_png']:.3f}")
    print(f"| {name} | {w['threads']} | {w['ratio']:.3f} | {w['mean_ratio']:.3f} | {vs} "
          f"| {f(w['median_encode_mb_per_s'])} ({f(w['min_time_encode_mb_per_s'])}) "
          f"| {f(w['median_decode_mb_per_s'])} ({f(w['min_time_decode_mb_per_s'])}) "
          + (f"| {f(w['encode_mb_per_cpu_s'])} / {f(w['decode_mb_per_cpu_s'])} " if cpu else "")
          + f"| {w['encode_runs']}/{w['decode_runs']} | {'yes' if w['verified'] else 'NO'} |")
if not png:
    sys.exit(0)
print()
print("targets (issue 2; ratios of medians measured in this run):")
l3 = [w for w in rows if w["codec"] == "l3" and w["parallel"] == "images"]
for w in l3:
    t = w["threads"]
    dec_target = 10 if t == 1 else 3
    ok = lambda good: "met" if good else "MISSED"
    print(f"  {t} thread(s): L3 decode / libpng decode = {w['decode_speedup_vs_png']:.2f}x "
          f"(target >= {dec_target}x: {ok(w['decode_speedup_vs_png'] >= dec_target)}); "
          f"L3 encode / libpng-6 encode = {w['encode_speedup_vs_png']:.2f}x "
          f"(target >= 20x: {ok(w['encode_speedup_vs_png'] >= 20)})")
    if cpu:
        print(f"      per CPU second (load-robust cross-check): decode {w['decode_cpu_speedup_vs_png']:.2f}x, "
              f"encode {w['encode_cpu_speedup_vs_png']:.2f}x")
for w in l3[:1]:
    print(f"  L3 bytes / PNG-6 bytes = {w['size_vs_png']:.3f} aggregate, {w['mean_size_vs_png']:.3f} "
          f"mean per image, {w['median_size_vs_png']:.3f} median, worst {w['worst_size_vs_png']:.3f} "
          f"({w['worst_size_vs_png_image']}) (target <= 1.25: "
          f"{'met' if w['size_vs_png'] <= 1.25 else 'MISSED'} by the aggregate, "
          f"{'met' if w['mean_size_vs_png'] <= 1.25 else 'MISSED'} by the mean)")
EOF
  echo "saved:    $base.json $base.txt"
  echo
}

for set in $SETS; do
  run_set "$set"
done
