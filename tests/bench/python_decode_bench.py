#!/usr/bin/python3
"""L3 decode from Python (dlprep_l3) against PNG decode with Pillow, in the same run.

Usage: PYTHONPATH=build/python python_decode_bench.py [PNG_DIR] [--repeats R] [--threads T]

PNG_DIR defaults to the FHD photo set (tests/bench/cache/fhd, made by make_photo_sets.py), else
sample_data/images. Each PNG is encoded to L3 in memory; both decoders' pixels are checked equal
before anything is timed. Then, over the whole set, median of R runs after one warm-up:
  1 thread:  dlprep_l3.decode(l3) against numpy.asarray(PIL.Image.open(png)), image by image,
             then L3 into one array reused (decode(l3, out=image)) against the same;
  T threads: a thread pool over the images (both release the GIL while they decode), and
             BatchDecoder("cpu", T).decode(all files) into one NHWC tensor (allocated once;
             Pillow's images stacked into it).
Figures: images/s and MB/s of decoded pixels (10^6 bytes), and L3's speed-up over Pillow. This is
what a PyTorch DataLoader worker pays per image through this module, overhead included.
"""
import argparse
import concurrent.futures
import glob
import io
import os
import sys

import numpy as np
from PIL import Image

import dlprep_l3
from median_timing import timed

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.path.join(HERE, "cache", "fhd")
    if not glob.glob(os.path.join(default, "*.png")):
        default = os.path.join(HERE, "..", "..", "sample_data", "images")
    parser.add_argument("png_dir", nargs="?", default=default)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    paths = sorted(glob.glob(os.path.join(args.png_dir, "*.png")))
    if not paths:
        sys.exit(f"python_decode_bench: no .png in {args.png_dir}")
    pngs = [open(p, "rb").read() for p in paths]

    def pil_decode(data):
        return np.asarray(Image.open(io.BytesIO(data)))

    sources = [pil_decode(d) for d in pngs]
    l3s = [dlprep_l3.encode(s, threads=args.threads) for s in sources]
    for path, source, l3 in zip(paths, sources, l3s):  # check before timing
        if not np.array_equal(dlprep_l3.decode(l3).reshape(source.shape), source):
            sys.exit(f"python_decode_bench: {path}: L3 decode differs from the PNG's pixels")
    shapes = {s.shape for s in sources}
    pixel_bytes = sum(s.size for s in sources)
    print(f"{len(paths)} images from {args.png_dir}, {pixel_bytes / 1e6:.1f} MB of pixels; "
          f"PNG {sum(map(len, pngs)) / 1e6:.1f} MB, L3 {sum(map(len, l3s)) / 1e6:.1f} MB; "
          f"{os.cpu_count()} cores")

    rows = []

    def row(name, pil_fn, l3_fn):
        pil_s, l3_s = timed(pil_fn, args.repeats), timed(l3_fn, args.repeats)
        rows.append((name, len(paths) / pil_s, pixel_bytes / pil_s / 1e6, len(paths) / l3_s,
                     pixel_bytes / l3_s / 1e6, pil_s / l3_s))

    row("1 thread", lambda: [pil_decode(d) for d in pngs],
        lambda: [dlprep_l3.decode(d) for d in l3s])
    if len(shapes) == 1:  # a new array costs its page faults: out= reuses one
        image = np.empty_like(sources[0])
        row("1 thread, L3 into one array (out=)", lambda: [pil_decode(d) for d in pngs],
            lambda: [dlprep_l3.decode(d, out=image) for d in l3s])
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        row(f"{args.threads} threads, pool over images",
            lambda: list(pool.map(pil_decode, pngs)),
            lambda: list(pool.map(dlprep_l3.decode, l3s)))
    if len(shapes) == 1:
        with dlprep_l3.BatchDecoder("cpu", args.threads) as decoder:
            batch = decoder.decode(l3s)
            if not np.array_equal(batch.reshape((len(sources),) + sources[0].shape),
                                  np.stack(sources)):
                sys.exit("python_decode_bench: the batch tensor differs from the PNGs' pixels")
            # Both into one tensor allocated once, as a loader's buffer pool would: a new one
            # of this size costs its page faults at every batch.
            tensor = np.empty_like(batch)
            with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
                row(f"{args.threads} threads, one batch tensor",
                    lambda: np.stack(list(pool.map(pil_decode, pngs)), out=tensor.reshape(
                        (len(sources),) + sources[0].shape)),
                    lambda: decoder.decode(l3s, out=tensor))

    print(f"{'':34} {'Pillow PNG':>21} {'dlprep_l3 L3':>21}")
    print(f"{'':34} {'img/s':>9} {'MB/s':>11} {'img/s':>9} {'MB/s':>11} {'L3/PNG':>7}")
    for name, pil_ips, pil_mbs, l3_ips, l3_mbs, ratio in rows:
        print(f"{name:34} {pil_ips:9.1f} {pil_mbs:11.1f} {l3_ips:9.1f} {l3_mbs:11.1f} "
              f"{ratio:6.1f}x")


if __name__ == "__main__":
    main()
