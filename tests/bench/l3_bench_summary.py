#!/usr/bin/env python3
"""The table of one `dlprep --json l3 bench --device cuda` report (schema dlprep.l3-device-bench/1,
man/dlprep-l3.1), for the GPU session's summary (tests/bench/gpu_session.sh).

Usage: l3_bench_summary.py REPORT.json
"""
import json
import sys

try:
    d = json.load(open(sys.argv[1]))
except Exception as e:  # a failed bench leaves no report: say so in the summary, do not fail it
    print("   (no report:", e, ")")
    sys.exit(0)
c = d["copy"]
print(f"   {d['device']}")
print(f"   {d['images']} images, ratio {d['ratio']:.3f}; H2D pinned {c['h2d_pinned_gb_per_s']:.1f} "
      f"pageable {c['h2d_pageable_gb_per_s']:.1f} D2H {c['d2h_pinned_gb_per_s']:.1f} "
      f"D2D {c['d2d_gb_per_s']:.0f} GB/s; ceiling {d['ceiling_gb_per_s']:.1f} GB/s")
lat = d["latency"]
print(f"   batch-1 latency: kernel {lat['kernel']['median_seconds']*1e3:.3f} ms, pinned "
      f"{lat['pinned']['median_seconds']*1e3:.3f} ms, host {lat['host']['median_seconds']*1e3:.3f} ms")
print(f"   {'batch':>5} {'layout':>8} {'res img/s':>10} {'res GB/s':>9} {'e2e img/s':>10} "
      f"{'e2e GB/s':>9} {'%ceil':>6} {'page GB/s':>9} {'ok':>3}")
for r in d["rows"]:
    e2e = "pinned_gb_per_s" in r
    print(f"   {r['batch']:>5} {r['layout']:>8} {r['resident_images_per_s']:>10.0f} "
          f"{r['resident_gb_per_s']:>9.1f} "
          f"{(r['pinned_images_per_s'] if e2e else 0):>10.0f} "
          f"{(r['pinned_gb_per_s'] if e2e else 0):>9.1f} "
          f"{(100 * r['pinned_fraction_of_ceiling'] if e2e else 0):>6.0f} "
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
