#!/usr/bin/env python3
"""nvJPEG through torchvision, the JPEG baseline of the L3 GPU benchmark (issue 4).

Usage: nvjpeg_torchvision.py JPEG_DIR [--batch 1,16,64,256] [--repeats 10] [--json OUT.json]

Run by tests/bench/gpu_session.sh on the device machine in the same session as
`dlprep l3 bench --device cuda`, on the same pictures as JPEG q90 (made by
tests/bench/make_gpu_carry.sh): it is the nvJPEG figure when dlprep was built without
libnvjpeg, and a cross-check of dlprep's own nvJPEG rows when it was. Batches repeat the files in
name order to each size, as `dlprep l3 bench` does. Each batch is decoded with
torchvision.io.decode_jpeg(list, device='cuda') (torchvision's batched nvJPEG path) after warm-up
runs and timed on the host clock around the call and torch.cuda.synchronize(): nvJPEG's default
backend decodes Huffman codes on the CPU, which device events alone would not count. Before any
time is reported, the decoded pictures are compared with torchvision's CPU decoder (libjpeg-turbo)
by PSNR, which must exceed 30 dB (IDCT differences only). Rates count decoded RGB bytes
(width x height x 3, GB = 10^9 bytes).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jpeg_dir")
    parser.add_argument("--batch", default="1,16,64,256")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()

    import torch
    import torchvision
    from torchvision.io import ImageReadMode, decode_jpeg, read_file

    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device", file=sys.stderr)
        return 77
    names = sorted(f for f in os.listdir(args.jpeg_dir) if f.lower().endswith((".jpg", ".jpeg")))
    if not names:
        print(f"nvjpeg_torchvision.py: no JPEG files in {args.jpeg_dir}", file=sys.stderr)
        return 2
    data = [read_file(os.path.join(args.jpeg_dir, n)) for n in names]
    reference = [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data]  # CPU, libjpeg-turbo
    device = torch.cuda.get_device_name(0)
    print(f"nvjpeg via torchvision {torchvision.__version__}, torch {torch.__version__}, "
          f"{device}: {len(names)} JPEGs from {args.jpeg_dir}")

    rows = []
    for batch in [int(b) for b in args.batch.split(",") if b]:
        inputs = [data[i % len(data)] for i in range(batch)]
        pixel_bytes = sum(reference[i % len(data)].numel() for i in range(batch))
        # Check first: every distinct picture against the CPU decode.
        out = decode_jpeg(inputs, device="cuda", mode=ImageReadMode.RGB)
        torch.cuda.synchronize()
        worst = math.inf
        for i in range(min(batch, len(data))):
            got, want = out[i].cpu(), reference[i]
            if got.shape != want.shape:
                print(f"FAIL: batch {batch}, image {i}: shape {tuple(got.shape)} vs "
                      f"{tuple(want.shape)}", file=sys.stderr)
                return 3
            mse = (got.double() - want.double()).pow(2).mean().item()
            worst = min(worst, 99.0 if mse == 0 else 10 * math.log10(255 * 255 / mse))
        if worst < 30:
            print(f"FAIL: batch {batch}: PSNR {worst:.1f} dB against the CPU decode",
                  file=sys.stderr)
            return 3
        for _ in range(args.warmup):
            decode_jpeg(inputs, device="cuda", mode=ImageReadMode.RGB)
            torch.cuda.synchronize()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            decode_jpeg(inputs, device="cuda", mode=ImageReadMode.RGB)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        rows.append({"batch": batch, "pixel_bytes": pixel_bytes, "median_seconds": median,
                     "min_seconds": min(times), "runs": len(times),
                     "images_per_s": batch / median, "gb_per_s": pixel_bytes / median / 1e9,
                     "min_psnr_db_vs_cpu": worst})
    print(f"{'batch':>6} {'img/s':>10} {'GB/s':>8} {'median ms':>10} {'PSNR vs cpu':>12}")
    for r in rows:
        print(f"{r['batch']:>6} {r['images_per_s']:>10.0f} {r['gb_per_s']:>8.2f} "
              f"{r['median_seconds'] * 1e3:>10.3f} {r['min_psnr_db_vs_cpu']:>12.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "dlprep.nvjpeg-torchvision/1", "device": device,
                       "torch": torch.__version__, "torchvision": torchvision.__version__,
                       "images": len(names), "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
