#!/usr/bin/python3
"""Independent reference for `dlprep criteo-preprocess`, written from the description of Meta
DLRM's data_utils.py (getCriteoAdData / processCriteoAdData), with NumPy and nothing of dlprep:

  * each line: 40 tab-separated fields (label, I1..I13, C1..C26); an empty field is '0'
    (FillMissing); the categorical fields are hex, int(x, 16) (Hex2Int), then % max_ind_range
    when a modulus is given (Modulus);
  * pass 1 (GenVocab): per column, a dict filled in order of first appearance over all days,
    with counts; DLRM then numbers the keys 0, 1, 2, ... in that order;
  * pass 2 (ApplyVocab): value -> its number; dense X_int[X_int < 0] = 0 (Neg2Zero); the loader
    takes np.log(X_int + 1) (Logarithm). dlprep's options generalise this: IDs start at id_base,
    values seen fewer than min_freq times map to an OOV ID, log offset configurable.

Writes the same files as dlprep's npy / dlrm output formats so that a test can compare them, and
the split layout as NVIDIA's DeepLearningExamples describe it (preproc/split_dataset.py): per day a
directory of label.bin (bool), numerical.bin (float16 x 13, the float32 values cast), cat_J.bin in
the smallest of int8/int16/int32 whose maximum exceeds the column's embedding table size
(get_categorical_feature_type), and model_size.json with the sizes in column order.
Deliberately simple and slow (a Python loop per row): it is the oracle, not the product.
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np

NUM_DENSE, NUM_SPARSE = 13, 26


def open_text(path):
    with open(path, 'rb') as f:
        magic = f.read(2)
    if magic == b'\x1f\x8b':
        return gzip.open(path, 'rt', encoding='ascii', newline='')
    return open(path, 'r', encoding='ascii', newline='')


def read_rows(path, modulus):
    """Yields (label, dense list, sparse list) per line."""
    with open_text(path) as f:
        for line in f:
            if line.endswith('\n'):
                line = line[:-1]
            if line.endswith('\r'):
                line = line[:-1]
            fields = line.split('\t')
            if len(fields) != 40:
                raise SystemExit(f'{path}: a row with {len(fields)} fields')
            fields = [x if x != '' else '0' for x in fields]
            label = int(fields[0])
            dense = [int(x) for x in fields[1:14]]
            sparse = [int(x, 16) for x in fields[14:]]
            sparse = [v % m if m > 0 else v for v, m in zip(sparse, modulus)]
            yield label, dense, sparse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('inputs', nargs='+')
    ap.add_argument('-o', '--output', required=True)
    ap.add_argument('--modulus', default='0')
    ap.add_argument('--min-freq', type=int, default=1)
    ap.add_argument('--id-base', type=int, default=0)
    ap.add_argument('--oov-id', type=int, default=None)
    ap.add_argument('--log-offset', type=float, default=1.0)
    ap.add_argument('--no-log', action='store_true')
    ap.add_argument('--output-format', choices=['npy', 'dlrm', 'split'], default='npy')
    ap.add_argument('--split-last', choices=['none', 'test-val', 'val-test'], default='none')
    a = ap.parse_args()
    mods = [int(x) for x in a.modulus.split(',')]
    modulus = mods * NUM_SPARSE if len(mods) == 1 else mods
    assert len(modulus) == NUM_SPARSE

    # Pass 1: first-appearance order and counts, over all days.
    order = [dict() for _ in range(NUM_SPARSE)]  # value -> count, insertion-ordered
    for path in a.inputs:
        for _, _, sparse in read_rows(path, modulus):
            for j, v in enumerate(sparse):
                order[j][v] = order[j].get(v, 0) + 1

    # IDs: kept values numbered from id_base in first-appearance order; the rest OOV.
    maps, oovs = [], []
    for j in range(NUM_SPARSE):
        kept = [v for v, c in order[j].items() if c >= max(a.min_freq, 1)]
        if a.oov_id is not None:
            oov = a.oov_id
        elif a.id_base >= 1:
            oov = a.id_base - 1
        else:
            oov = a.id_base + len(kept)
        maps.append({v: a.id_base + i for i, v in enumerate(kept)})
        oovs.append(oov)
    # Embedding table sizes: every ID, the OOV one included, is below them.
    tables = [max(a.id_base + len(maps[j]), oovs[j] + 1) for j in range(NUM_SPARSE)]
    cat_types = [next(t for t in (np.int8, np.int16, np.int32) if n < np.iinfo(t).max)
                 for n in tables]

    os.makedirs(a.output, exist_ok=True)
    for day, path in enumerate(a.inputs):
        labels, dense, sparse = [], [], []
        for label, d, s in read_rows(path, modulus):
            labels.append(label)
            dense.append(d)
            sparse.append([maps[j].get(v, oovs[j]) for j, v in enumerate(s)])
        y = np.array(labels, dtype=np.int64).reshape(-1, 1).astype(np.int32)
        x_int = np.array(dense, dtype=np.int64).reshape(-1, NUM_DENSE)
        x_int[x_int < 0] = 0
        x_cat = np.array(sparse, dtype=np.int64).reshape(-1, NUM_SPARSE).astype(np.int32)
        last = day == len(a.inputs) - 1
        parts = [(f'day_{day}', slice(None))]
        if last and a.split_last != 'none':
            first = (len(y) + 1) // 2  # numpy.array_split(rows, 2): the first half is larger
            names = ['test', 'val'] if a.split_last == 'test-val' else ['val', 'test']
            parts = [(names[0], slice(0, first)), (names[1], slice(first, None))]
        for stem, sl in parts:
            if a.output_format == 'dlrm':
                rows = np.concatenate([y[sl], x_int[sl].astype(np.int32), x_cat[sl]], axis=1)
                rows.astype('<i4').tofile(os.path.join(a.output, stem + '.bin'))
                continue
            if a.no_log:
                xd = x_int[sl].astype(np.float32)
            else:
                xd = np.log(x_int[sl].astype(np.float64) + a.log_offset).astype(np.float32)
            if a.output_format == 'split':
                d = os.path.join(a.output, stem)
                os.makedirs(d, exist_ok=True)
                y[sl].astype(np.bool_).tofile(os.path.join(d, 'label.bin'))
                xd.astype('<f2').tofile(os.path.join(d, 'numerical.bin'))
                for j in range(NUM_SPARSE):
                    x_cat[sl, j].astype(cat_types[j]).tofile(os.path.join(d, f'cat_{j}.bin'))
                continue
            np.save(os.path.join(a.output, stem + '_dense.npy'), xd.astype('<f4'))
            np.save(os.path.join(a.output, stem + '_sparse.npy'), x_cat[sl].astype('<i4'))
            np.save(os.path.join(a.output, stem + '_labels.npy'), y[sl].astype('<i4'))
    if a.output_format == 'split':
        with open(os.path.join(a.output, 'model_size.json'), 'w') as f:
            json.dump({f'cat_{j}': tables[j] for j in range(NUM_SPARSE)}, f)
    # Vocabulary, as dlprep writes it (values in first-appearance order, counts).
    for j in range(NUM_SPARSE):
        np.save(os.path.join(a.output, f'C{j + 1}_values.npy'),
                np.array(list(order[j].keys()), dtype='<u4'))
        np.save(os.path.join(a.output, f'C{j + 1}_counts.npy'),
                np.array(list(order[j].values()), dtype='<u8'))


if __name__ == '__main__':
    sys.exit(main())
