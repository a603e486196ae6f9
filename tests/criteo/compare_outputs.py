#!/usr/bin/python3
"""Compares dlprep's criteo-preprocess outputs (DIR_A) with the reference's (DIR_B).
Integer arrays must be equal; float32 dense values equal, or within 1 ulp: both sides compute
log in float64 and round once to float32, so only a float64 log differing in its last bit right
at a float32 rounding boundary could differ (never seen; the tolerance is written here so that a
libm change does not fail the suite. The split layout's float16 values likewise within 1 ulp.
Exit 0 when equal, 3 on a difference."""
import glob
import json
import os
import sys

import numpy as np


SPLIT_TYPES = {'label.bin': np.bool_, 'numerical.bin': np.float16}


def compare_split(a, b):
    """The split layout's day directories file by file, and model_size.json; the number of
    differences. A cat_J.bin's type comes from the reference's table sizes."""
    bad = 0
    with open(os.path.join(b, 'model_size.json')) as f:
        sizes = list(json.load(f).values())
    with open(os.path.join(a, 'model_size.json')) as f:
        if list(json.load(f).items()) != [(f'cat_{j}', n) for j, n in enumerate(sizes)]:
            print('model_size.json differs')
            bad += 1
    names = sorted(os.path.relpath(p, b) for p in glob.glob(os.path.join(b, '*', '*.bin')))
    for n in names:
        pa, pb = os.path.join(a, n), os.path.join(b, n)
        if not os.path.exists(pa):
            print('missing', pa)
            bad += 1
            continue
        base = os.path.basename(n)
        if base in SPLIT_TYPES:
            dtype = SPLIT_TYPES[base]
        else:
            size = sizes[int(base[4:-4])]
            dtype = next(t for t in (np.int8, np.int16, np.int32) if size < np.iinfo(t).max)
        xa, xb = np.fromfile(pa, dtype=dtype), np.fromfile(pb, dtype=dtype)
        if xa.shape != xb.shape or os.path.getsize(pa) != os.path.getsize(pb):
            print(n, ': sizes', os.path.getsize(pa), 'vs', os.path.getsize(pb))
            bad += 1
        elif dtype == np.float16:
            ulp = np.abs(xa.view(np.int16).astype(np.int64) - xb.view(np.int16).astype(np.int64))
            if ulp.max(initial=0) > 1:
                i = int(np.argmax(ulp))
                print(n, ': differs at', i, xa[i], xb[i])
                bad += 1
        elif not np.array_equal(xa, xb):
            i = int(np.argwhere(xa != xb)[0][0])
            print(n, ': differs at', i, xa[i], xb[i])
            bad += 1
    return bad, len(names)


def main(a, b, fmt):
    bad = 0
    if fmt == 'split':
        bad, files = compare_split(a, b)
        bad += compare_vocab(a, b)
        print('equal' if bad == 0 else f'{bad} differences', f'({files} files)')
        return 0 if bad == 0 else 3
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(b, '*.npy' if fmt == 'npy' else '*.bin')))
    names = [n for n in names if not n.startswith('C')]  # vocab files are compared below
    if not names:
        print('no reference outputs in', b)
        return 3
    for n in names:
        pa, pb = os.path.join(a, n), os.path.join(b, n)
        if not os.path.exists(pa):
            print('missing', pa)
            bad += 1
            continue
        if fmt == 'dlrm':
            xa, xb = np.fromfile(pa, dtype='<i4'), np.fromfile(pb, dtype='<i4')
        else:
            xa, xb = np.load(pa), np.load(pb)
            with open(pa, 'rb') as f:
                f.read(8)
                hl = int.from_bytes(f.read(2), 'little')
            if (10 + hl) % 64 != 0:
                print(n, ': data not 64-byte aligned')
                bad += 1
        if xa.shape != xb.shape or xa.dtype != xb.dtype:
            print(n, ': shape/dtype', xa.shape, xa.dtype, 'vs', xb.shape, xb.dtype)
            bad += 1
            continue
        if xa.dtype == np.float32:
            ulp = np.abs(xa.view(np.int32).astype(np.int64) - xb.view(np.int32).astype(np.int64))
            if ulp.max(initial=0) > 1:
                i = np.unravel_index(np.argmax(ulp), ulp.shape)
                print(n, ': differs at', i, xa[i], xb[i])
                bad += 1
            elif ulp.max(initial=0) == 1:
                print(n, ':', int((ulp == 1).sum()), 'values differ by 1 ulp (tolerated)')
        elif not np.array_equal(xa, xb):
            i = np.argwhere(xa != xb)[0]
            print(n, ': differs at', tuple(i), xa[tuple(i)], xb[tuple(i)])
            bad += 1
    bad += compare_vocab(a, b)
    print('equal' if bad == 0 else f'{bad} differences', f'({len(names)} files)')
    return 0 if bad == 0 else 3


def compare_vocab(a, b):
    bad = 0
    for j in range(1, 27):
        for kind in ('values', 'counts'):
            pa = os.path.join(a, 'vocab', f'C{j}_{kind}.npy')
            pb = os.path.join(b, f'C{j}_{kind}.npy')
            if os.path.exists(pb) and os.path.exists(pa):
                if not np.array_equal(np.load(pa), np.load(pb)):
                    print(f'vocab C{j} {kind} differ')
                    bad += 1
    return bad


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else 'npy'))
