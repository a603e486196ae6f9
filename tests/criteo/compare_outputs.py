#!/usr/bin/python3
"""Compares dlprep's criteo-preprocess outputs (DIR_A) with the reference's (DIR_B).
Integer arrays must be equal; float32 dense values equal, or within 1 ulp: both sides compute
log in float64 and round once to float32, so only a float64 log differing in its last bit right
at a float32 rounding boundary could differ (never seen; the tolerance is written here so that a
libm change does not fail the suite). The split layout's float16 values likewise within 1 ulp.
Exit 0 when equal, 3 on a difference."""
import glob
import json
import os
import sys

import numpy as np

SPLIT_TYPES = {'label.bin': np.bool_, 'numerical.bin': np.float16}


def id_type(size):
    """NVIDIA's get_categorical_feature_type: the first type whose maximum exceeds the size."""
    return next(t for t in (np.int8, np.int16, np.int32) if size < np.iinfo(t).max)


def differences(n, xa, xb):
    """1 (and where) when the arrays differ, floats by more than 1 ulp; else 0."""
    if xa.shape != xb.shape or xa.dtype != xb.dtype:
        print(n, ': shape/dtype', xa.shape, xa.dtype, 'vs', xb.shape, xb.dtype)
        return 1
    if xa.dtype.kind == 'f':
        bits = {2: np.int16, 4: np.int32}[xa.dtype.itemsize]
        ulp = np.abs(xa.view(bits).astype(np.int64) - xb.view(bits).astype(np.int64))
        if ulp.max(initial=0) > 1:
            i = np.unravel_index(np.argmax(ulp), ulp.shape)
            print(n, ': differs at', i, xa[i], xb[i])
            return 1
        if ulp.max(initial=0) == 1:
            print(n, ':', int((ulp == 1).sum()), 'values differ by 1 ulp (tolerated)')
        return 0
    if not np.array_equal(xa, xb):
        i = tuple(np.argwhere(xa != xb)[0])
        print(n, ': differs at', i, xa[i], xb[i])
        return 1
    return 0


def load(path, fmt, sizes):
    """The array of one output file, by layout; and whether its data is misaligned (npy)."""
    if fmt == 'dlrm':
        return np.fromfile(path, dtype='<i4'), False
    if fmt == 'split':
        base = os.path.basename(path)
        dtype = SPLIT_TYPES.get(base) or id_type(sizes[int(base[4:-4])])
        return np.fromfile(path, dtype=dtype), False
    with open(path, 'rb') as f:
        f.read(8)
        header = int.from_bytes(f.read(2), 'little')
    return np.load(path), (10 + header) % 64 != 0


def main(a, b, fmt):
    bad = 0
    sizes = None
    if fmt == 'split':
        # model_size.json: the table sizes in column order, which give the cat_J.bin types.
        with open(os.path.join(b, 'model_size.json')) as f:
            sizes = list(json.load(f).values())
        with open(os.path.join(a, 'model_size.json')) as f:
            if list(json.load(f).items()) != [(f'cat_{j}', n) for j, n in enumerate(sizes)]:
                print('model_size.json differs')
                bad += 1
        pattern = os.path.join('*', '*.bin')
    else:
        pattern = '*.npy' if fmt == 'npy' else '*.bin'
    names = sorted(os.path.relpath(p, b) for p in glob.glob(os.path.join(b, pattern)))
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
        (xa, misaligned), (xb, _) = load(pa, fmt, sizes), load(pb, fmt, sizes)
        if misaligned:
            print(n, ': data not 64-byte aligned')
            bad += 1
        bad += differences(n, xa, xb)
    for j in range(1, 27):
        for kind in ('values', 'counts'):
            pa = os.path.join(a, 'vocab', f'C{j}_{kind}.npy')
            pb = os.path.join(b, f'C{j}_{kind}.npy')
            if os.path.exists(pb) and os.path.exists(pa):
                if not np.array_equal(np.load(pa), np.load(pb)):
                    print(f'vocab C{j} {kind} differ')
                    bad += 1
    print('equal' if bad == 0 else f'{bad} differences', f'({len(names)} files)')
    return 0 if bad == 0 else 3


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else 'npy'))
