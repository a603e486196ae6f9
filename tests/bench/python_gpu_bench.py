#!/usr/bin/python3
"""L3 batches decoded on the GPU from Python (dlprep_l3): one call per batch against the
overlapped pipeline (decode_batches), in the same run.

Usage: PYTHONPATH=build/python python_gpu_bench.py L3_DIR [--batch B] [--batches N]
                                                         [--repeats R] [--device cuda|cpu]
                                                         [--step-ms S]

L3_DIR holds .l3 files of one size (gpu_session.sh: carry/l3bench/fhd). N batches of B files
(the files in turn) go from host bytes into device tensors reused from batch to batch, as a
training loop's would be:
  per call:   BatchDecoder.decode(files, output="device", out=tensor), one batch at a time:
              staging copy, H2D, kernel, wait;
  depth D:    BatchDecoder.decode_batches(batches, depth=D, out=ring of D + 1 tensors): the copy
              of one batch overlaps the decode of another.
Each mode is timed over the N batches, median of R runs after one warm-up; figures are images/s
and GB/s of decoded pixels (10^9 bytes) and the speed-up over one call per batch. The tensors are
first checked against the CPU backend's (through PyTorch, where this Python has it). Exits 77
with the reason where there is no CUDA decoder. --device cpu runs the same on the CPU backend
(host tensors, decoded by the pipeline's worker thread while the caller goes on).

--step-ms S: after each batch the loop sleeps S ms, a training step that leaves the host's
cores free (a GPU step the host waits for, as loss.item() does): one call per batch then takes
decode + step per batch, and decode_batches max(decode, step) when the decode overlaps the step.
The "overlap" column is how much of the shorter of the two the pipeline hid: 100% for a perfect
overlap, 0% for none.
"""
import argparse
import glob
import os
import sys
import time

import numpy as np

import dlprep_l3
from median_timing import timed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("l3_dir")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--step-ms", type=float, default=0.0)
    args = parser.parse_args()
    step = args.step_ms / 1e3

    paths = sorted(glob.glob(os.path.join(args.l3_dir, "*.l3")))
    if not paths:
        sys.exit(f"python_gpu_bench: no .l3 in {args.l3_dir}")
    files = [open(p, "rb").read() for p in paths]
    batches = [[files[(k * args.batch + i) % len(files)] for i in range(args.batch)]
               for k in range(args.batches)]
    try:
        gpu = dlprep_l3.BatchDecoder(args.device, os.cpu_count())
    except dlprep_l3.Error as e:
        print(f"skipped: {e}")
        sys.exit(77)
    output = "device" if args.device == "cuda" else "host"

    # The tensors: the first batches' own tensors, reused as the caller's memory.
    ring = [gpu.decode(batches[0], output=output) for _ in range(4)]
    if isinstance(ring[0], list):
        sys.exit("python_gpu_bench: the files are not all of one size")
    shape = ring[0].shape
    pixel_bytes = args.batches * int(np.prod(shape))
    cpu = dlprep_l3.BatchDecoder("cpu", os.cpu_count())
    try:
        if output == "device":
            import torch
        for k, tensor in enumerate(gpu.decode_batches(batches[:3], out=ring[:3])):
            if not np.array_equal(torch.as_tensor(tensor, device="cuda").cpu().numpy()
                                  if output == "device" else tensor, cpu.decode(batches[k])):
                sys.exit(f"python_gpu_bench: pipelined batch {k} differs from the CPU's")
        print("checked: pipelined tensors equal the CPU backend's")
    except ImportError:
        print("no torch: the device tensors are not read back (the CUDA test suite checks them)")
    print(f"{args.batches} batches of {shape} from {len(paths)} files of {args.l3_dir}, "
          f"{pixel_bytes / 1e9:.2f} GB of pixels; {gpu.device}, {os.cpu_count()} cores")

    def train_step():
        if step > 0:
            time.sleep(step)

    def per_call():
        for files_k in batches:
            gpu.decode(files_k, output=output, out=ring[0])
            train_step()

    def pipelined(depth):
        def run():
            for _ in gpu.decode_batches(batches, depth=depth, out=ring[:depth + 1]):
                train_step()
        return run

    base = timed(per_call, args.repeats)
    rows = [("one call per batch", base)]
    for depth in (2, 3):
        rows.append((f"decode_batches, depth {depth}", timed(pipelined(depth), args.repeats)))
    steps = args.batches * step
    decode = base - steps  # one call per batch: the decodes and the steps one after the other
    if step > 0:
        print(f"training steps of {args.step_ms:g} ms: {steps:.3f} s of the {base:.3f} s of one "
              f"call per batch; the decodes {decode:.3f} s")
    print(f"{'':28} {'img/s':>9} {'GB/s':>8} {'speed-up':>9}" +
          (f" {'overlap':>8}" if step > 0 else ""))
    for name, seconds in rows:
        line = (f"{name:28} {args.batches * args.batch / seconds:9.1f} "
                f"{pixel_bytes / seconds / 1e9:8.2f} {base / seconds:8.2f}x")
        if step > 0:
            hidden = (base - seconds) / max(min(decode, steps), 1e-9)
            line += f" {100 * hidden:7.0f}%"
        print(line)


if __name__ == "__main__":
    main()
