#!/usr/bin/env bash
# convert-dataset without a serial bottleneck (issue 3; BENCHMARKS.md "convert-dataset without a
# serial bottleneck"): with c cores, single-core decode time d (of the source files) and encode
# time e (target format) per image, the ideal rate is c / (d + e) images/s; the target is >= 90% of
# it, "plus the I/O the disk imposes, measured and stated".
#
# Two sets: the photos as given (N images) and the same photos TIMES times over (hard links under
# other names: same bytes, other keys). The large set shows the steady state and that memory does
# not grow with the number of samples; the small one also carries what each run pays once (start,
# enumeration, the first touch of every worker's buffers).
# Brackets, because this shared VM drifts by 10-25% within minutes: each of REPEATS rounds times
# `dlprep -jc convert-dataset SRC DST --to T` on each set into a fresh DST (the previous output
# removed and `sync`ed, untimed; the source in the page cache), each run between two runs of
# `dlprep l3 bench --codecs source,T --threads 1` on the N photos (d: the source files as they are,
# decoded by their own codec; e: T's encoder; CPU seconds of one thread, one timed run after a
# warm-up), whose mean gives that run's d and e. A run's ratio is its measured rate over its own
# ideal; the figure of record is the median over the rounds.
# The I/O, r + w per image, both from the same convert run's own `stage_seconds`: r, reading the
# source file (one read() into a per-thread buffer; the stage also sniffs and probes the header),
# w, creating, writing, closing and renaming the output file (one write() of the whole file): on
# this VM, page-cache pages that were handed back to the host cost up to 3.7 ms/MB to fill again,
# so a separate reader or writer measures this cost only when it happens to reuse the same pages.
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

# run_convert SRC DST TARGET JSON: the report to JSON, "max_rss_kib user_s sys_s" to JSON.time
run_convert() {
  /usr/bin/time -f '%M %U %S' -o "$4.time" "$dlprep" -q --json -j"$jobs" convert-dataset "$1" "$2" \
    --to "$3" --force >"$4"
}

# bench_codecs K: d and e of target $t, the K-th bracket
bench_codecs() {
  "$dlprep" -q --json l3 bench "$images" --codecs "source,$t" --threads 1 --repeats 1 \
    >"$out/codec-$name-$1.json"
}

for t in $targets; do
  name=${t//:/-}
  dst="$out/dst-$name"
  rm -rf "$dst"
  run_convert "$images" "$dst" "$t" "$out/warmup.json"  # warm-up: page cache, allocator
  k=0
  bench_codecs $k
  for r in $(seq 1 "$repeats"); do
    for which in small big; do
      src=$images
      [ $which = big ] && src=$big
      rm -rf "$dst"
      sync
      run_convert "$src" "$dst" "$t" "$out/run-$name-$which-$r.json"
      k=$((k + 1))
      bench_codecs $k  # closes this run's bracket and opens the next one's
    done
  done
  rm -rf "$dst"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out" "$n" "$jobs" "$times" "$repeats" $targets <<'PY'
import json, statistics, sys
out, n, jobs, times, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
targets = sys.argv[6:]
med = statistics.median
verdict = lambda x: "PASS" if x >= 0.9 else "miss"

def codec_rows(name, k):
    return {row["codec"].split(":")[0]: row for row in
            json.load(open(f"{out}/codec-{name}-{k}.json"))["rows"] if row["threads"] == 1}

def run_figures(t, name, set_, r, k):
    """One convert run against its bracket (codec runs k-1 and k): rates, ratios, stages."""
    samples = n if set_ == "small" else n * times
    pair = [codec_rows(name, k - 1), codec_rows(name, k)]
    d = sum(x["source"]["median_decode_cpu_seconds"] for x in pair) / 2 / n
    e = sum(x[t.split(":")[0]]["median_encode_cpu_seconds"] for x in pair) / 2 / n
    run = json.load(open(f"{out}/run-{name}-{set_}-{r}.json"))
    assert run["converted"] == samples, run
    rss, user, sys_ = open(f"{out}/run-{name}-{set_}-{r}.json.time").read().split()[-3:]
    stages = {key: v / samples for key, v in run["stage_seconds"].items()}
    io = stages["read"] + stages["write"]
    measured = samples / run["seconds"]
    return dict(d=d, e=e, r=stages["read"], w=stages["write"], ideal=jobs / (d + e),
                measured=measured, ratio=measured * (d + e) / jobs,
                ratio_io=measured * (d + e + io) / jobs, stages=stages,
                cpu=(float(user) + float(sys_)) / samples, rss=int(rss))

print("| target | samples | d source decode ms/image | e encode ms/image "
      "| r read, w write ms/image (in the run) | ideal img/s c/(d+e) | measured img/s "
      "| measured / ideal | measured / ideal with I/O c/(d+e+r+w) | CPU ms/image (user+sys) "
      "| peak RSS |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
notes = []
for t in targets:
    name = t.replace(":", "-")
    for i, set_ in enumerate(["small", "big"]):
        rounds = [run_figures(t, name, set_, r, 2 * (r - 1) + i + 1) for r in range(1, repeats + 1)]
        m = lambda key: med(x[key] for x in rounds)
        print(f"| {t} | {n if set_ == 'small' else n * times} | {m('d') * 1e3:.2f} "
              f"| {m('e') * 1e3:.2f} | {m('r') * 1e3:.2f}, {m('w') * 1e3:.2f} | {m('ideal'):.1f} "
              f"| {m('measured'):.1f} | {m('ratio'):.3f} ({verdict(m('ratio'))}) "
              f"| {m('ratio_io'):.3f} ({verdict(m('ratio_io'))}) | {m('cpu') * 1e3:.2f} "
              f"| {max(x['rss'] for x in rounds) / 1024:.0f} MiB |")
        notes.append(f"{t}, {set_} set: rounds (measured/ideal, with I/O): " +
                     ", ".join(f"{x['ratio']:.3f}/{x['ratio_io']:.3f}" for x in rounds))
        notes.append(f"{t}, {set_} set: inside the run, one thread's ms/image (median): " +
                     " ".join(f"{key} {med(x['stages'][key] for x in rounds) * 1e3:.2f}"
                              for key in rounds[0]["stages"]))
print()
print("\n".join(notes))
PY
