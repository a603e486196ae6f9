#!/usr/bin/env bash
# convert-dataset without a serial bottleneck (issue 3; BENCHMARKS.md "convert-dataset without a
# serial bottleneck"): with c cores, single-core decode time d (source format) and encode time e
# (target format) per image, the ideal rate is c / (d + e) images/s; the target is >= 90% of it.
# d and e are measured in the same run by `dlprep l3 bench` (one thread, CPU seconds, median);
# convert-dataset then runs with -jc over the same images into a new dataset (the source in the
# page cache; the previous output removed and `sync`ed before each run, untimed, so that no run
# competes with the last one's writeback), median wall time of REPEATS runs. Memory: the peak RSS of
# a run over the set and over the set repeated TIMES times (hard links under other names), which
# must not grow with the number of samples. The I/O the disk imposes (BENCHMARKS.md: "plus the
# I/O the disk imposes, measured and stated") is measured in the same run: the time one thread
# takes to write the converted files' bytes as new files into the same file system (w per image);
# the ratio is also given against c / (d + e + w).
#
# Usage: tests/bench/convert_bench.sh [DLPREP] [IMAGE_DIR] [OUT_DIR]
# Environment: TARGETS (default "l3 bmp"), REPEATS (default 3), JOBS (default: all cores),
#   TIMES (default 10).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dlprep=$(realpath "${1:-$here/../../build/dlprep}")
images=$(realpath "${2:-$here/cache/fhd}")
out=${3:-$(mktemp -d /tmp/convert-bench.XXXXXX)}
targets=${TARGETS:-l3 bmp}
repeats=${REPEATS:-3}
jobs=${JOBS:-$(nproc)}
times=${TIMES:-10}
[ -d "$images" ] || { echo "no images in $images (run tests/bench/make_photo_sets.py)" >&2; exit 1; }
mkdir -p "$out"
out=$(realpath "$out")
n=$(find "$images" -maxdepth 1 -type f | wc -l)

echo "# convert-dataset bench: $(date -u +%FT%TZ), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, -j$jobs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# images: $images ($n files), output in $out, $repeats repeats"

codecs="png"
for t in $targets; do codecs="$codecs,$t"; done
"$dlprep" -q --json l3 bench "$images" --codecs "$codecs" --threads 1 --repeats "$repeats" \
  --max-seconds 10 >"$out/codec-bench.json"

# The set TIMES times over, as hard links (same bytes, other keys): the memory check.
big="$out/src-x$times"
rm -rf "$big"
for k in $(seq 1 "$times"); do
  mkdir -p "$big/copy$k"
  for f in "$images"/*; do ln "$f" "$big/copy$k/$(basename "$f")" 2>/dev/null || cp "$f" "$big/copy$k/"; done
done

# run_convert SRC DST TARGET -> "seconds max_rss_kib cpu_seconds"
run_convert() {
  /usr/bin/time -f '%M %U %S' -o "$out/time.txt" "$1" -q --json -j"$jobs" convert-dataset "$2" "$3" \
    --to "$4" --force >"$out/convert.json"
  /usr/bin/python3 - "$out/convert.json" "$out/time.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rss, user, sys_ = open(sys.argv[2]).read().split()[-3:]
print(r["seconds"], rss, float(user) + float(sys_), r["converted"])
PY
}

for t in $targets; do
  dst="$out/dst-${t//:/-}"
  rm -rf "$dst"
  run_convert "$dlprep" "$images" "$dst" "$t" >/dev/null  # warm-up: page cache
  : >"$out/runs-$t.txt"
  for r in $(seq 1 "$repeats"); do
    rm -rf "$dst"
    sync
    run_convert "$dlprep" "$images" "$dst" "$t" >>"$out/runs-$t.txt"
  done
  # w: one thread writes the same bytes as new files next to the dataset, under the conditions
  # of a convert run (the previous files removed, then `sync`), median of REPEATS.
  /usr/bin/python3 - "$dst/data" "$out/writes" "$repeats" >"$out/write-$t.txt" <<'PY'
import os, statistics, subprocess, sys, time
src, dst, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
blobs = [open(os.path.join(src, f), "rb").read() for f in sorted(os.listdir(src))]
times = []
for r in range(repeats):
    os.makedirs(dst, exist_ok=True)
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    for i, b in enumerate(blobs):
        with open(os.path.join(dst, "%d.tmp" % i), "wb") as f:
            f.write(b)
    times.append(time.perf_counter() - start)
    for i in range(len(blobs)):
        os.unlink(os.path.join(dst, "%d.tmp" % i))
print(statistics.median(times), sum(len(b) for b in blobs))
PY
  dstbig="$out/dstbig-${t//:/-}"
  rm -rf "$dstbig"
  sync
  run_convert "$dlprep" "$big" "$dstbig" "$t" >"$out/big-$t.txt"
  rm -rf "$dstbig"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out" "$n" "$jobs" "$times" $targets <<'PY'
import json, statistics, sys
out, n, jobs, times, targets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
bench = json.load(open(out + "/codec-bench.json"))
rows = {r["codec"].split(":")[0]: r for r in bench["rows"] if r["threads"] == 1}
d = rows["png"]["median_decode_cpu_seconds"] / n
print(f"source PNG decode, 1 thread: {d * 1e3:.2f} ms/image\n")
print("| target | encode ms/image (1 thread) | write ms/image | ideal img/s c/(d+e) | ideal with I/O c/(d+e+w) "
      "| measured img/s (median) | measured / ideal | measured / ideal with I/O | CPU ms / image "
      "| peak RSS, {0} samples | peak RSS, {1} samples |".format(n, n * times))
print("|---|---|---|---|---|---|---|---|---|---|---|")
for t in targets:
    name = t.split(":")[0]
    e = rows[name]["median_encode_cpu_seconds"] / n
    ideal = jobs / (d + e)
    runs = [line.split() for line in open(f"{out}/runs-{t}.txt")]
    secs = statistics.median(float(r[0]) for r in runs)
    rss = max(int(r[1]) for r in runs)
    cpu = statistics.median(float(r[2]) for r in runs)
    big = open(f"{out}/big-{t}.txt").read().split()
    w = float(open(f"{out}/write-{t}.txt").read().split()[0]) / n
    ideal_io = jobs / (d + e + w)
    measured = n / secs
    verdict = lambda x: "PASS" if x >= 0.9 else "miss"
    print(f"| {t} | {e * 1e3:.2f} | {w * 1e3:.2f} | {ideal:.1f} | {ideal_io:.1f} | {measured:.1f} "
          f"| {measured / ideal:.3f} ({verdict(measured / ideal)}) "
          f"| {measured / ideal_io:.3f} ({verdict(measured / ideal_io)}) "
          f"| {cpu / n * 1e3:.2f} | {rss / 1024:.0f} MiB | {int(big[1]) / 1024:.0f} MiB |")
PY
