#!/usr/bin/env bash
# convert-dataset without a serial bottleneck (issue 3; BENCHMARKS.md "convert-dataset without a
# serial bottleneck"): with c cores, single-core decode time d (of the source files) and encode
# time e (target format) per image, the ideal rate is c / (d + e) images/s; the target is >= 90% of
# it, "plus the I/O the disk imposes, measured and stated".
#
# Pairs, because this shared VM drifts by 10-20% within minutes: each of REPEATS rounds measures d
# and e with `dlprep l3 bench --codecs source,T --threads 1` (d: the source files as they are,
# decoded by their own codec; e: T's encoder; CPU seconds of one thread, one timed run after a
# warm-up), then at once times `dlprep -jc convert-dataset SRC DST --to T` into a fresh DST (the
# previous output removed and `sync`ed, untimed; the source in the page cache). A round's ratio is
# its measured rate over its own ideal; the figure of record is the median over the rounds.
# w, the I/O: the seconds the same convert run spent creating, writing, closing and renaming its
# output files (its own `stage_seconds.write`, one write() of the whole file each): on this VM,
# page-cache pages that were handed back to the host cost up to 1.6 ms/MB to fill again, so a
# separate writer measures this cost only when it happens to reuse the same pages.
# Memory: the peak RSS of a run over the set and over the set repeated TIMES times (hard links
# under other names), which must not grow with the number of samples.
#
# Usage: tests/bench/convert_bench.sh [DLPREP] [IMAGE_DIR] [OUT_DIR]
# Environment: TARGETS (default "l3 bmp"), REPEATS (default 5), JOBS (default: all cores),
#   TIMES (default 10).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dlprep=$(realpath "${1:-$here/../../build/dlprep}")
images=$(realpath "${2:-$here/cache/fhd}")
out=${3:-$(mktemp -d /tmp/convert-bench.XXXXXX)}
targets=${TARGETS:-l3 bmp}
repeats=${REPEATS:-5}
jobs=${JOBS:-$(nproc)}
times=${TIMES:-10}
[ -d "$images" ] || { echo "no images in $images (run tests/bench/make_photo_sets.py)" >&2; exit 1; }
mkdir -p "$out"
out=$(realpath "$out")
n=$(find "$images" -maxdepth 1 -type f | wc -l)

echo "# convert-dataset bench: $(date -u +%FT%TZ), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, -j$jobs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# images: $images ($n files), output in $out, $repeats rounds"

# The set TIMES times over, as hard links (same bytes, other keys): the memory check.
big="$out/src-x$times"
rm -rf "$big"
for k in $(seq 1 "$times"); do
  mkdir -p "$big/copy$k"
  for f in "$images"/*; do ln "$f" "$big/copy$k/$(basename "$f")" 2>/dev/null || cp "$f" "$big/copy$k/"; done
done

# run_convert SRC DST TARGET JSON: the report to JSON, "max_rss_kib cpu_seconds" to JSON.time
run_convert() {
  /usr/bin/time -f '%M %U %S' -o "$4.time" "$dlprep" -q --json -j"$jobs" convert-dataset "$1" "$2" \
    --to "$3" --force >"$4"
}

for t in $targets; do
  name=${t//:/-}
  dst="$out/dst-$name"
  rm -rf "$dst"
  run_convert "$images" "$dst" "$t" "$out/warmup.json"  # warm-up: page cache, allocator
  for r in $(seq 1 "$repeats"); do
    "$dlprep" -q --json l3 bench "$images" --codecs "source,$t" --threads 1 --repeats 1 \
      >"$out/codec-$name-$r.json"
    rm -rf "$dst"
    sync
    run_convert "$images" "$dst" "$t" "$out/run-$name-$r.json"
  done
  dstbig="$out/dstbig-$name"
  rm -rf "$dstbig"
  sync
  run_convert "$big" "$dstbig" "$t" "$out/big-$name.json"
  rm -rf "$dstbig"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out" "$n" "$jobs" "$times" "$repeats" $targets <<'PY'
import json, statistics, sys
out, n, jobs, times, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
targets = sys.argv[6:]
med = statistics.median
verdict = lambda x: "PASS" if x >= 0.9 else "miss"
print("| target | d source decode ms/image | e encode ms/image | w write ms/image (in the run) "
      "| ideal img/s c/(d+e) | measured img/s | measured / ideal | measured / ideal with I/O c/(d+e+w) "
      "| decode ms/image inside the run (-j%d) | CPU ms/image | %d samples: img/s, / ideal with I/O "
      "| peak RSS, %d samples | peak RSS, %d samples |" % (jobs, n * times, n, n * times))
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for t in targets:
    name = t.replace(":", "-")
    rounds = []
    for r in range(1, repeats + 1):
        rows = {row["codec"].split(":")[0]: row for row in
                json.load(open(f"{out}/codec-{name}-{r}.json"))["rows"] if row["threads"] == 1}
        d = rows["source"]["median_decode_cpu_seconds"] / n
        e = rows[t.split(":")[0]]["median_encode_cpu_seconds"] / n
        run = json.load(open(f"{out}/run-{name}-{r}.json"))
        assert run["converted"] == n, run
        rss, user, sys_ = open(f"{out}/run-{name}-{r}.json.time").read().split()[-3:]
        stages = run["stage_seconds"]
        w = stages["write"] / n
        measured = n / run["seconds"]
        rounds.append(dict(d=d, e=e, w=w, ideal=jobs / (d + e), measured=measured,
                           ratio=measured / (jobs / (d + e)), ratio_io=measured / (jobs / (d + e + w)),
                           decode_in_run=stages["decode"] / n, cpu=(float(user) + float(sys_)) / n,
                           rss=int(rss)))
    big = open(f"{out}/big-{name}.json.time").read().split()
    big_run = json.load(open(f"{out}/big-{name}.json"))
    assert big_run["converted"] == n * times, big_run
    m = lambda k: med(x[k] for x in rounds)
    # The big set against the rounds' median d and e, and its own write time.
    big_rate = n * times / big_run["seconds"]
    big_w = big_run["stage_seconds"]["write"] / (n * times)
    big_ratio_io = big_rate / (jobs / (m("d") + m("e") + big_w))
    print(f"| {t} | {m('d') * 1e3:.2f} | {m('e') * 1e3:.2f} | {m('w') * 1e3:.2f} | {m('ideal'):.1f} "
          f"| {m('measured'):.1f} | {m('ratio'):.3f} ({verdict(m('ratio'))}) "
          f"| {m('ratio_io'):.3f} ({verdict(m('ratio_io'))}) | {m('decode_in_run') * 1e3:.2f} "
          f"| {m('cpu') * 1e3:.2f} | {big_rate:.1f}, {big_ratio_io:.3f} "
          f"| {max(x['rss'] for x in rounds) / 1024:.0f} MiB "
          f"| {int(big[0]) / 1024:.0f} MiB |")
    print("  rounds (measured/ideal, with I/O): " +
          ", ".join(f"{x['ratio']:.3f}/{x['ratio_io']:.3f}" for x in rounds))
PY
