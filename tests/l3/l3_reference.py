#!/usr/bin/python3
"""Independent reference decoder for the L3 image format, bitstream version 1.

Written from the specification dlprep-l3(5) (man/dlprep-l3.5) alone, without reading
dlprep's implementation, to check that the specification is complete and true.

Usage: l3_reference.py FILE.l3 OUT.npy
       l3_reference.py --batch LIST     (LIST: lines "FILE.l3 OUT.npy"; one process for many)

Writes the decoded pixels as a uint8 array of shape (H, W, C) (interleaved HWC, as the
specification's COLOUR TRANSFORM section says). On a malformed file it prints one line,
"l3_reference: FILE: STEP: message", to standard error and exits 1 (2 for usage errors);
STEP is the number of the check of the specification's DECODING section that failed.

Decoding is vectorised across every patch of every channel at once: groups are unpacked
for the whole file in one pass, then the rows are reconstructed for all patches together
(row y of every patch depends only on row y-1 of the same patch).
"""
import sys

import numpy as np

MAGIC = bytes.fromhex("8B4C33490D0A1A0A")
MOD = 65521


class L3Error(Exception):
    def __init__(self, step, msg):
        super().__init__(msg)
        self.step = step


def u32(b, o):
    return int.from_bytes(b[o:o + 4], "little")


def adler32_spec(buf):
    """Adler-32 exactly as the specification writes it: A = 1 + sum b[i] mod 65521,
    B = n + sum (n - i) b[i] mod 65521, value B * 65536 + A."""
    a = np.frombuffer(buf, dtype=np.uint8).astype(np.int64)
    n = a.size
    A = (1 + int(a.sum())) % MOD
    B = (n + int(((n - np.arange(n, dtype=np.int64)) * a).sum())) % MOD
    return B * 65536 + A


def adler32_segments(arr, starts, sizes):
    """The same formula for many segments arr[starts[k] : starts[k] + sizes[k]] at once."""
    a = arr.astype(np.int64)
    idx = np.arange(a.size, dtype=np.int64)
    s1 = np.add.reduceat(a, starts)           # sum b
    s2 = np.add.reduceat(a * idx, starts)     # sum (global index) * b
    n = sizes.astype(np.int64)
    st = starts.astype(np.int64)
    # sum (n - (g - start)) b = (n + start) sum b - sum g b
    A = (1 + s1) % MOD
    B = (n + (n + st) * s1 - s2) % MOD
    return (B * 65536 + A).astype(np.int64)


def ceil_div(a, b):
    return -(-a // b)


def parse_and_decode(data):
    n_in = len(data)
    # 1. at least 40 bytes and the magic
    if n_in < 40 or data[:8] != MAGIC:
        raise L3Error(1, "not an L3 file (short input or bad magic)")
    version, C, plog, flags, mode = data[8], data[9], data[10], data[11], data[12]
    # 2. version and mode
    if version != 1 or mode != 0:
        raise L3Error(2, "unsupported version %d / mode %d" % (version, mode))
    # 3. channels, patch size, flags, reserved
    if not 1 <= C <= 4:
        raise L3Error(3, "bad channel count %d" % C)
    if not 3 <= plog <= 8:
        raise L3Error(3, "bad patch_log2 %d" % plog)
    if flags & ~1:
        raise L3Error(3, "unknown flags 0x%02x" % flags)
    sg = flags & 1
    if sg and C < 3:
        raise L3Error(3, "subtract-green with %d channels" % C)
    if any(data[13:16]) or any(data[36:40]):
        raise L3Error(3, "reserved bytes not 0")
    # 4. dimensions
    W, H = u32(data, 16), u32(data, 20)
    if W == 0 or H == 0:
        raise L3Error(4, "zero width or height (%dx%d)" % (W, H))
    if W > 65535 or H > 65535 or W * H > (1 << 30):
        raise L3Error(4, "limit exceeded: %dx%d" % (W, H))
    # 5. file size
    fsize = int.from_bytes(data[24:32], "little")
    if fsize > n_in:
        raise L3Error(5, "truncated: header says %d bytes, input has %d" % (fsize, n_in))
    if fsize < n_in:
        raise L3Error(5, "trailing bytes: header says %d bytes, input has %d" % (fsize, n_in))
    # 6. patch table fits; header checksum over bytes 0-31 then the table
    N = 1 << plog
    PX, PY = ceil_div(W, N), ceil_div(H, N)
    P = PX * PY
    table_end = 40 + 8 * C * P
    if table_end > n_in:
        raise L3Error(6, "patch table (%d bytes) does not fit in the file" % (8 * C * P))
    if adler32_spec(data[:32] + data[40:table_end]) != u32(data, 32):
        raise L3Error(6, "header checksum mismatch")
    # 7. patch sizes
    tab = np.frombuffer(data, dtype="<u4", count=2 * C * P, offset=40).reshape(C, P, 2)
    ends = tab[:, :, 0].astype(np.int64)
    sums = tab[:, :, 1].astype(np.int64)
    i = np.arange(P)
    pw = np.minimum(N, W - (i % PX) * N)            # patch widths
    ph = np.minimum(N, H - (i // PX) * N)           # patch heights
    gpr = ceil_div(pw, 16)
    G = gpr * ph
    npred = ceil_div(3 * (ph - 1), 8)
    codes_len = 1 + npred + ceil_div(G, 2)
    starts_rel = np.concatenate([np.zeros((C, 1), np.int64), ends[:, :-1]], axis=1)
    psize = ends - starts_rel
    bad = (psize < codes_len[None, :]) | (psize > (codes_len + 16 * G)[None, :])
    if bad.any():
        c, k = np.argwhere(bad)[0]
        raise L3Error(7, "patch %d of channel %d: size %d outside %d..%d"
                      % (k, c, psize[c, k], codes_len[k], codes_len[k] + 16 * G[k]))
    chan_len = ends[:, -1]
    chan_start = table_end + np.concatenate([[0], np.cumsum(chan_len)[:-1]])
    if table_end + int(chan_len.sum()) != n_in:
        raise L3Error(7, "channel data ends at %d, file at %d"
                      % (table_end + int(chan_len.sum()), n_in))

    # ---- all structure checked: "only then is the output allocated" ----
    # Flatten (channel, patch) -> q = c * P + i.
    Q = C * P
    start = (chan_start[:, None] + starts_rel).reshape(Q)      # absolute start of each patch
    size = psize.reshape(Q)
    qw, qh = np.tile(pw, C), np.tile(ph, C)
    qgpr, qG, qnpred = np.tile(gpr, C), np.tile(G, C), np.tile(npred, C)
    qcodes = np.tile(codes_len, C)
    arr = np.frombuffer(data, dtype=np.uint8)
    padded = np.concatenate([arr, np.zeros(8, np.uint8)]).astype(np.int64)
    lim = padded.size - 1

    class _Safe:  # reads past the end of the data (only ever for unused values) give 0
        def __getitem__(self, idx):
            return padded[np.clip(idx, 0, lim)]
    pad = _Safe()

    # 8. patch checksums
    got = adler32_segments(arr, start, size)
    badsum = got != sums.reshape(Q)
    # 9. padding bits of code arrays; payload sizes
    # predictor codes: last byte's bits at and above 3(h-1) - 8(npred-1) must be 0
    has_pred = qnpred > 0
    last_pred = pad[start + qnpred]                     # start + 1 + npred - 1
    used_bits = 3 * (qh - 1) - 8 * (qnpred - 1)
    badpad = has_pred & ((last_pred >> np.where(has_pred, used_bits, 0)) != 0)
    wc0 = start + 1 + qnpred                            # first width-code byte
    odd = (qG % 2) == 1
    badpad |= odd & ((pad[wc0 + qG // 2] >> 4) != 0)

    # width codes of every group of every patch
    tot = int(qG.sum())
    gq = np.repeat(np.arange(Q), qG)                    # patch of each group
    gfirst = np.concatenate([[0], np.cumsum(qG)[:-1]])
    g = np.arange(tot) - gfirst[gq]                     # group number within its patch
    nib = (pad[wc0[gq] + g // 2] >> (4 * (g % 2))) & 15
    expl = (nib >= 9).astype(np.int64)
    b = np.where(nib >= 9, nib - 9, nib)
    gsize = 2 * b + expl
    csum = np.cumsum(gsize)
    payload_total = np.add.reduceat(gsize, gfirst) if tot else np.zeros(Q, np.int64)
    badpay = payload_total != (size - qcodes)

    for q in range(Q):   # report the first failing patch, channel-major order, step 8 before 9
        if badsum[q]:
            raise L3Error(8, "patch %d of channel %d: checksum mismatch" % (q % P, q // P))
        if badpad[q]:
            raise L3Error(9, "patch %d of channel %d: non-zero padding bits in the code arrays"
                          % (q % P, q // P))
        if badpay[q]:
            raise L3Error(9, "patch %d of channel %d: payloads take %d bytes, patch leaves %d"
                          % (q % P, q // P, payload_total[q], size[q] - qcodes[q]))

    # group payload offsets: exclusive prefix sum within the patch
    excl = csum - gsize - (csum - gsize)[gfirst][gq] if tot else csum
    off = start[gq] + qcodes[gq] + excl
    base = np.where(nib == 0, 0,
                    np.where(nib <= 8, 256 - (1 << np.maximum(nib - 1, 0)), pad[off]))
    planes0 = off + expl
    v = np.zeros((tot, 16), np.int64)
    jbits = np.arange(16)
    for k in range(8):
        m = b > k
        if not m.any():
            continue
        o = planes0 + 2 * k
        plane = np.where(m, pad[o] | (pad[o + 1] << 8), 0)
        v |= ((plane[:, None] >> jbits) & 1) << k
    r = (v + base[:, None]) & 255

    # scatter the groups into a residual array (patch, row, x), padded to 16-pixel groups
    gmax = ceil_div(N, 16)
    R = np.zeros((Q, N, gmax, 16), np.int64)
    R[gq, g // qgpr[gq], g % qgpr[gq], :] = r
    R = R.reshape(Q, N, gmax * 16)[:, :, :N]

    # predictor code of every row y >= 1 of every patch
    pred = np.zeros((Q, N), np.int64)
    for y in range(1, N):
        pos = 3 * (y - 1)
        o = start + 1 + pos // 8
        pred[:, y] = ((pad[o] | (pad[o + 1] << 8)) >> (pos % 8)) & 7

    # reconstruction
    Pix = np.zeros((Q, N, N), np.int64)
    seed = pad[start]
    Pix[:, 0, :] = (seed[:, None] + np.cumsum(R[:, 0, :], axis=1)) & 255
    x = np.arange(N)
    TLi = np.maximum(x - 1, 0)[None, :].repeat(Q, 0)
    TRi = np.minimum(x[None, :] + 1, (qw - 1)[:, None])
    for y in range(1, N):
        live = qh > y
        if not live.any():
            break
        T = Pix[:, y - 1, :]
        TL = np.take_along_axis(T, TLi, 1)
        TR = np.take_along_axis(T, TRi, 1)

        def avg(a, c):
            return (a + c + 1) >> 1
        dT = np.abs(TL + TR - 2 * T)
        dTL = np.abs(TR - T)
        dTR = np.abs(TL - T)
        paeth = np.where((dT <= dTL) & (dT <= dTR), T, np.where(dTL <= dTR, TL, TR))
        cands = np.stack([
            T,
            avg(avg(TL, TR), T),
            np.maximum(np.minimum(TL, T), np.minimum(np.maximum(TL, T), TR)),
            paeth,
            avg(TL, T),
            avg(T, TR),
            TL,
            TR,
        ])
        pr = np.take_along_axis(cands, pred[None, :, y, None].repeat(N, 2), 0)[0]
        Pix[:, y, :] = np.where(live[:, None], (pr + R[:, y, :]) & 255, 0)

    # assemble planes
    pl = Pix.reshape(C, PY, PX, N, N).transpose(0, 1, 3, 2, 4).reshape(C, PY * N, PX * N)
    planes = pl[:, :H, :W]
    if sg:
        planes = planes.copy()
        planes[0] = (planes[0] + planes[1]) & 255
        planes[2] = (planes[2] + planes[1]) & 255
    return np.ascontiguousarray(planes.transpose(1, 2, 0)).astype(np.uint8)


def decode_file(path):
    with open(path, "rb") as f:
        data = f.read()
    return parse_and_decode(data)


def run_one(src, dst):
    try:
        img = decode_file(src)
    except L3Error as e:
        sys.stderr.write("l3_reference: %s: step %d: %s\n" % (src, e.step, e))
        return 1
    except OSError as e:
        sys.stderr.write("l3_reference: %s: %s\n" % (src, e.strerror or e))
        return 1
    except Exception as e:  # a bug in this decoder: still one line, never a traceback
        sys.stderr.write("l3_reference: %s: internal error: %s: %s\n"
                         % (src, type(e).__name__, e))
        return 1
    try:
        np.save(dst, img)
    except OSError as e:
        sys.stderr.write("l3_reference: %s: %s\n" % (dst, e.strerror or e))
        return 1
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--batch":
        rc = 0
        try:
            with open(argv[2]) as f:
                lines = [ln.split() for ln in f if ln.strip()]
        except OSError as e:
            sys.stderr.write("l3_reference: %s: %s\n" % (argv[2], e.strerror or e))
            return 1
        for parts in lines:
            if len(parts) != 2:
                sys.stderr.write("l3_reference: bad batch line: %s\n" % " ".join(parts))
                rc = 1
                continue
            rc |= run_one(parts[0], parts[1])
        return rc
    if len(argv) != 3:
        sys.stderr.write("usage: l3_reference.py FILE.l3 OUT.npy | --batch LIST\n")
        return 2
    return run_one(argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
