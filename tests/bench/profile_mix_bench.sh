#!/usr/bin/env bash
# profile-mix targets (issue 3, "Targets"; BENCHMARKS.md "A throttled storage"), on real FHD photos:
#  1. --storage-bw is set where neither all-PNG nor all-BMP is best (the bandwidth at which the
#     predicted optimum is PNG:BMP = 1:1, from a first, unverified probe);
#  2. one run with --formats png,bmp --measure-sweep: the chosen mix's measured throughput vs the
#     best of the 11-point sweep measured in the same run (target: within 5%), vs all-PNG (target
#     >= 1.5x), and profiling time (probe + verify) vs the sweep's time (target <= 1/3);
#  3. one run with --formats png,bmp,l3 at the same bandwidth: the mix and its measured gain over
#     the best measured PNG:BMP point of step 2.
# Usage: tests/bench/profile_mix_bench.sh [DLPREP] [IMAGE_DIR] [OUT_DIR]
# Environment: JOBS (decode workers, default: all cores), SAMPLE (default 16), PASS_SECONDS
# (default 2), REPEATS (default 1), STORAGE_BW (skip step 1 and use this, e.g. 120MB/s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dlprep=${1:-$here/../../build/dlprep}
images=${2:-$here/cache/fhd}
out=${3:-$(mktemp -d /tmp/profile-mix-bench.XXXXXX)}
jobs=${JOBS:-$(nproc)}
sample=${SAMPLE:-16}
pass=${PASS_SECONDS:-2}
repeats=${REPEATS:-1}
mkdir -p "$out"
[ -d "$images" ] || { echo "no images in $images (run tests/bench/make_photo_sets.py)" >&2; exit 1; }

echo "# profile-mix bench: $(date -u +%FT%TZ), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, -j$jobs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# images: $images ($(ls "$images" | wc -l) files), sample $sample, pass ${pass}s x $repeats"

if [ -z "${STORAGE_BW:-}" ]; then
  "$dlprep" -q -j"$jobs" --json profile-mix "$images" --formats png,bmp --sample "$sample" \
    --storage-bw 100MB/s --no-verify >"$out/probe.json"
  STORAGE_BW=$(/usr/bin/python3 - "$out/probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["format"]: x for x in d["formats"]}
w = d["resources"]["decode_workers"]
b = (f["png"]["bytes_per_image"] + f["bmp"]["bytes_per_image"]) / 2
c = (f["png"]["decode_cpu_seconds_per_image"] + f["bmp"]["decode_cpu_seconds_per_image"]) / 2
print("%.0f" % (w * b / c))   # load = decode at PNG:BMP = 1:1
PY
)
fi
echo "# storage bandwidth: $STORAGE_BW bytes/s"

start=$(date +%s.%N)
"$dlprep" -q -j"$jobs" profile-mix "$images" --formats png,bmp --sample "$sample" \
  --storage-bw "$STORAGE_BW" --measure-sweep --pass-seconds "$pass" --repeats "$repeats" \
  -o "$out/pngbmp.json" --plot "$out/pngbmp.svg" | tee "$out/pngbmp.txt"
"$dlprep" -q -j"$jobs" profile-mix "$images" --formats png,bmp --sample "$sample" \
  --storage-bw "$STORAGE_BW" --search liquid --pass-seconds "$pass" --repeats "$repeats" \
  -o "$out/liquid.json" >/dev/null
"$dlprep" -q -j"$jobs" profile-mix "$images" --formats png,bmp,l3 --sample "$sample" \
  --storage-bw "$STORAGE_BW" --pass-seconds "$pass" --repeats "$repeats" \
  -o "$out/l3.json" --plot "$out/l3.svg" | tee "$out/l3.txt"
echo "# wall time of the three runs: $(echo "$(date +%s.%N) - $start" | bc) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
r = json.load(open(out + "/pngbmp.json"))
lq = json.load(open(out + "/liquid.json"))
l3 = json.load(open(out + "/l3.json"))
pts = r["sweep"]["points"]
best = max(pts, key=lambda p: p["measured_images_per_s"])
png_only = [p for p in pts if p["ratio"] == 1.0][0]["measured_images_per_s"]
bmp_only = [p for p in pts if p["ratio"] == 0.0][0]["measured_images_per_s"]
chosen = r["measured"]["images_per_s"]
prof = r["seconds"]["probe"] + r["seconds"]["verify"]
sweep = r["seconds"]["sweep"]
def ok(c): return "PASS" if c else "MISS"
print()
print("| figure | value | target |")
print("|---|---|---|")
print("| chosen mix (lp) | %s, predicted %.1f img/s, measured %.1f img/s | |" % (r["mix_text"], r["predicted"]["images_per_s"], chosen))
print("| liquid (11 ratios, predicted) | %s, measured %.1f img/s | |" % (lq["mix_text"], lq["measured"]["images_per_s"]))
print("| best measured sweep point | png:%.1f, %.1f img/s | |" % (best["ratio"], best["measured_images_per_s"]))
print("| chosen / best sweep | %.3f | >= 0.95 %s |" % (chosen / best["measured_images_per_s"], ok(chosen >= 0.95 * best["measured_images_per_s"])))
print("| chosen / all-PNG | %.2fx | >= 1.5x %s |" % (chosen / png_only, ok(chosen >= 1.5 * png_only)))
print("| chosen / all-BMP | %.2fx | |" % (chosen / bmp_only))
print("| profiling (probe + verify) / sweep time | %.1f s / %.1f s = %.2f | <= 0.33 %s |" % (prof, sweep, prof / sweep, ok(prof <= sweep / 3)))
print("| with L3: mix | %s, predicted %.1f, measured %.1f img/s | |" % (l3["mix_text"], l3["predicted"]["images_per_s"], l3["measured"]["images_per_s"]))
print("| with L3: gain over best measured PNG:BMP | %.2fx | |" % (l3["measured"]["images_per_s"] / best["measured_images_per_s"]))
print()
print("sweep (share of png: predicted / measured img/s):")
for p in pts:
    print("  %.1f  %8.1f  %8.1f" % (p["ratio"], p["predicted"]["images_per_s"], p["measured_images_per_s"]))
PY
echo "# reports and plots in $out"
