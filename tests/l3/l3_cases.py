#!/usr/bin/python3
"""Test material for reference_test.sh, from the specification dlprep-l3(5) alone.

  l3_cases.py images DIR       generated test images (fixed seed): DIR/small/NAME.png|pgm|ppm
                               plus DIR/small/NAME.npy, the exact pixels (H, W, C) uint8;
                               DIR/big/ the same for two images near the automatic patch
                               size's threshold
  l3_cases.py synth DIR        L3 files written directly from the specification with random
                               codes (every predictor, width code, explicit base, patch size,
                               channel count, with and without subtract-green, a non-zero
                               r(0,0), non-zero bits past the end of short groups)
  l3_cases.py hostile SRC DIR  malformed files derived from the valid L3 file SRC, one per
                               check of the DECODING section; DIR/list.txt names them with the
                               step that must reject each
  l3_cases.py bitflips SRC DIR every single-bit error of SRC (the page says each is detected)
  l3_cases.py mutants DIR SRC...  60 random changes to each SRC's patches and table with every
                               checksum recomputed (what the fuzz target does)
  l3_cases.py compare LIST     LIST lines: NAME REF.npy DLPREP.raw [EXPECTED]; EXPECTED is an
                               .npy of pixels or an image file PIL reads losslessly; prints
                               "ok NAME" / "FAIL NAME ..." and exits 1 on any failure
"""
import os
import sys

import numpy as np

sys.dont_write_bytecode = True   # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import l3_reference as ref  # noqa: E402

MAGIC = ref.MAGIC


def adler(b):
    return ref.adler32_spec(bytes(b))


# --------------------------------------------------------------------------- images
def gen_images(top):
    out = os.path.join(top, "small")
    big = os.path.join(top, "big")
    os.makedirs(out, exist_ok=True)
    os.makedirs(big, exist_ok=True)
    from PIL import Image
    rng = np.random.default_rng(20261123)
    modes = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}

    def save(name, a, ext="png", where=out):
        a = np.ascontiguousarray(a.astype(np.uint8))
        if a.ndim == 2:
            a = a[:, :, None]
        c = a.shape[2]
        img = Image.fromarray(a[:, :, 0] if c == 1 else a, modes[c])
        img.save(os.path.join(where, "%s.%s" % (name, ext)))
        np.save(os.path.join(where, name + ".npy"), a)

    def content(kind, h, w, c):
        y, x = np.mgrid[0:h, 0:w]
        if kind == "noise":
            return rng.integers(0, 256, (h, w, c))
        if kind == "flat":
            return np.broadcast_to(rng.integers(0, 256, c), (h, w, c))
        if kind == "grad":
            return np.stack([(x * 7 + y * 3 + 40 * k) % 256 for k in range(c)], 2)
        if kind == "vgrad":
            return np.stack([(y * (k + 1)) % 256 for k in range(c)], 2)
        if kind == "checker":   # extreme residuals: 0/255 alternation, wrap-around
            return np.stack([((x + y + k) % 2) * 255 for k in range(c)], 2)
        if kind == "smooth":    # photo-like: smooth field plus small noise
            f = (128 + 100 * np.sin(x / 9.0 + np.arange(c)[:, None, None]) *
                 np.cos(y / 13.0)).transpose(1, 2, 0)
            return np.clip(f + rng.integers(-3, 4, (h, w, c)), 0, 255)
        if kind == "edges":     # steps: the predictors disagree near them
            return np.stack([((x // 5 + y // 3 + k) % 4) * 80 for k in range(c)], 2)
        if kind == "lowbits":   # narrow residual ranges
            return 200 + rng.integers(0, 4, (h, w, c))
        raise ValueError(kind)

    kinds = ["noise", "flat", "grad", "vgrad", "checker", "smooth", "edges", "lowbits"]
    n = 0
    # every channel count, every kind, moderate awkward sizes
    for c in (1, 2, 3, 4):
        for k, kind in enumerate(kinds):
            w, h = [(37, 29), (33, 17), (65, 40), (17, 63), (100, 3), (3, 100), (47, 47),
                    (129, 31)][(k + c) % 8]
            save("c%d_%s_%dx%d" % (c, kind, w, h), content(kind, h, w, c))
            n += 1
    # tiny and thin images
    for c in (1, 2, 3, 4):
        for (w, h) in [(1, 1), (1, 17), (17, 1), (1, 300), (300, 1), (2, 2), (7, 9)]:
            save("c%d_tiny_%dx%d" % (c, w, h), content("noise", h, w, c))
            n += 1
    # widths and heights either side of group (16) and patch (8..256) boundaries
    for w in (7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257):
        c = 1 + w % 4
        save("c%d_w%d" % (c, w), content(["noise", "smooth", "edges"][w % 3], 9, w, c))
        save("c%d_h%d" % (c, w), content(["smooth", "noise", "grad"][w % 3], w, 5, c))
        n += 2
    for s in (255, 256, 257):
        save("c3_sq%d" % s, content("smooth", s, s, 3))
        n += 1
    # the encoder's automatic patch size changes above 1280x720 pixels (encoded with auto only)
    save("c1_auto64_961x960", content("edges", 960, 961, 1), where=big)
    save("c4_auto32_960x960", content("smooth", 960, 960, 4), where=big)
    # PGM / PPM inputs
    # 16-bit samples are outside the format: dlprep reads them as 8 bits (with a warning);
    # no expected pixels, only the two decoders are compared
    g16 = ((np.mgrid[0:23, 0:37][1] * 1800 + rng.integers(0, 300, (23, 37))) % 65536)
    Image.fromarray(g16.astype(np.uint16)).save(os.path.join(out, "c1_16bit_37x23.png"))
    save("c1_pgm_45x23", content("smooth", 23, 45, 1), "pgm")
    save("c3_ppm_45x23", content("noise", 23, 45, 3), "ppm")
    n += 5
    return n


# --------------------------------------------------------------------------- writer
def write_l3(planes_codes, C, plog, sg, W, H):
    """Assemble a file from per-(channel, patch) patch byte strings (the writer side of the
    specification's FILE LAYOUT, Patch table and Header sections)."""
    N = 1 << plog
    PX, PY = -(-W // N), -(-H // N)
    P = PX * PY
    table = bytearray()
    data = bytearray()
    for c in range(C):
        end = 0
        for i in range(P):
            pb = planes_codes[c][i]
            end += len(pb)
            table += end.to_bytes(4, "little") + adler(pb).to_bytes(4, "little")
            data += pb
    hdr = bytearray(40)
    hdr[0:8] = MAGIC
    hdr[8], hdr[9], hdr[10], hdr[11], hdr[12] = 1, C, plog, 1 if sg else 0, 0
    hdr[16:20] = W.to_bytes(4, "little")
    hdr[20:24] = H.to_bytes(4, "little")
    hdr[24:32] = (40 + len(table) + len(data)).to_bytes(8, "little")
    hdr[32:36] = adler(hdr[:32] + table).to_bytes(4, "little")
    return bytes(hdr + table + data)


def random_patch(rng, w, h, policy):
    """One patch with random seed, predictor codes, width codes and payloads."""
    gpr = -(-w // 16)
    G = gpr * h
    out = bytearray([rng.integers(0, 256)])
    nbits = 3 * (h - 1)
    bits = 0
    for y in range(1, h):
        code = int(rng.integers(0, 8)) if policy != "pred_cycle" else (y - 1) % 8
        bits |= code << (3 * (y - 1))
    out += bits.to_bytes(-(-nbits // 8), "little")
    if policy == "all8":
        q = np.full(G, 8)
    elif policy == "all0":
        q = np.zeros(G, int)
    elif policy == "expl":
        q = rng.integers(9, 16, G)
    else:
        q = rng.integers(0, 16, G)
    wc = bytearray(-(-G // 2))
    for g in range(G):
        wc[g // 2] |= int(q[g]) << (4 * (g % 2))
    out += wc
    for g in range(G):
        qq = int(q[g])
        b = qq - 9 if qq >= 9 else qq
        if qq >= 9:
            out.append(int(rng.integers(0, 256)))
        j = g % gpr
        valid = min(16, w - 16 * j)
        for k in range(b):
            plane = int(rng.integers(0, 65536))
            if policy != "junk_tail":
                plane &= (1 << valid) - 1          # bits past a short group are 0
            out += plane.to_bytes(2, "little")
    return bytes(out)


def gen_synth(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    cases = [
        # name, C, plog, sg, W, H, policy
        ("c1_p8_random", 1, 3, False, 37, 29, "random"),
        ("c2_p16_random", 2, 4, False, 50, 33, "random"),
        ("c3_p8_sg", 3, 3, True, 23, 17, "random"),
        ("c3_p32_nosg", 3, 5, False, 70, 45, "random"),
        ("c4_p16_sg", 4, 4, True, 33, 31, "random"),
        ("c4_p64_nosg", 4, 6, False, 65, 66, "random"),
        ("c1_p128_random", 1, 7, False, 130, 129, "random"),
        ("c3_p256_sg", 3, 8, True, 257, 40, "random"),
        ("c1_p256_1x1", 1, 8, False, 1, 1, "random"),
        ("c2_p8_1xN", 2, 3, False, 1, 40, "random"),
        ("c4_p8_Nx1", 4, 3, True, 40, 1, "random"),
        ("c1_p32_predcycle", 1, 5, False, 45, 33, "pred_cycle"),
        ("c3_p16_maxsize", 3, 4, True, 20, 20, "all8"),
        ("c3_p16_minsize", 3, 4, False, 20, 20, "all0"),
        ("c2_p32_explicit", 2, 5, False, 33, 34, "expl"),
        ("c1_p16_junktail", 1, 4, False, 21, 19, "junk_tail"),
        ("c4_p8_junktail", 4, 3, False, 13, 11, "junk_tail"),
    ]
    for name, C, plog, sg, W, H, policy in cases:
        N = 1 << plog
        PX, PY = -(-W // N), -(-H // N)
        pcs = []
        for c in range(C):
            row = []
            for i in range(PX * PY):
                w = min(N, W - (i % PX) * N)
                h = min(N, H - (i // PX) * N)
                row.append(random_patch(rng, w, h, policy))
            pcs.append(row)
        with open(os.path.join(out, name + ".l3"), "wb") as f:
            f.write(write_l3(pcs, C, plog, sg, W, H))
    return len(cases)


# --------------------------------------------------------------------------- hostile
def gen_hostile(src, out):
    """Malformed variants of SRC. Each entry: name, the step of DECODING that rejects it."""
    os.makedirs(out, exist_ok=True)
    d = bytearray(open(src, "rb").read())
    C, plog = d[9], d[10]
    W, H = ref.u32(d, 16), ref.u32(d, 20)
    N = 1 << plog
    P = (-(-W // N)) * (-(-H // N))
    tend = 40 + 8 * C * P
    cases = []

    def hsum(b):
        b[32:36] = adler(b[:32] + b[40:40 + 8 * b[9] *
                         (-(-ref.u32(b, 16) // (1 << b[10]))) *
                         (-(-ref.u32(b, 20) // (1 << b[10])))]).to_bytes(4, "little")
        return b

    def fsize(b):
        b[24:32] = len(b).to_bytes(8, "little")
        return b

    def put(name, step, b):
        with open(os.path.join(out, name + ".l3"), "wb") as f:
            f.write(bytes(b))
        cases.append((name, step))

    def patch_bounds(c, i):
        ends = [ref.u32(d, 40 + 8 * k) for k in range(C * P)]
        cstart = tend + sum(ends[k * P + P - 1] for k in range(c))
        s = 0 if i == 0 else ends[c * P + i - 1]
        return cstart + s, cstart + ends[c * P + i]

    def resum_patch(b, c, i):
        s, e = patch_bounds(c, i)
        o = 40 + 8 * (c * P + i) + 4
        b[o:o + 4] = adler(b[s:e]).to_bytes(4, "little")
        return hsum(b)

    put("empty", 1, b"")
    put("short39", 1, d[:39])
    b = bytearray(d); b[1] ^= 0x20; put("bad_magic", 1, b)
    b = bytearray(d); b[0:8] = b"\x89PNG\r\n\x1a\n"; put("png_magic", 1, b)
    b = bytearray(d); b[8] = 2; put("version2", 2, b)
    b = bytearray(d); b[8] = 0; put("version0", 2, b)
    b = bytearray(d); b[12] = 1; put("mode1", 2, b)
    b = bytearray(d); b[9] = 0; put("channels0", 3, b)
    b = bytearray(d); b[9] = 5; put("channels5", 3, b)
    b = bytearray(d); b[10] = 2; put("patch_log2_2", 3, b)
    b = bytearray(d); b[10] = 9; put("patch_log2_9", 3, b)
    b = bytearray(d); b[11] |= 2; put("flag_bit1", 3, b)
    b = bytearray(d); b[11] |= 0x80; put("flag_bit7", 3, b)
    b = bytearray(d); b[9] = 2; b[11] = 1; put("subtract_green_c2", 3, b)
    b = bytearray(d); b[9] = 1; b[11] = 1; put("subtract_green_c1", 3, b)
    b = bytearray(d); b[14] = 1; put("reserved13", 3, b)
    b = bytearray(d); b[39] = 1; put("reserved36", 3, b)
    b = bytearray(d); b[16:20] = (0).to_bytes(4, "little"); put("width0", 4, b)
    b = bytearray(d); b[20:24] = (0).to_bytes(4, "little"); put("height0", 4, b)
    b = bytearray(d); b[16:20] = (65536).to_bytes(4, "little"); put("width65536", 4, b)
    b = bytearray(d); b[20:24] = (1 << 31).to_bytes(4, "little"); put("height2e31", 4, b)
    b = bytearray(d); b[16:24] = (65535).to_bytes(4, "little") + (16385).to_bytes(4, "little")
    put("pixels_over_2e30", 4, b)
    put("truncated_1", 5, d[:-1])
    put("truncated_table", 5, d[:tend - 3])
    put("trailing_byte", 5, d + b"\0")
    b = bytearray(d); b[24:32] = (1 << 63).to_bytes(8, "little"); put("file_size_huge", 5, b)
    # a plausible header (file_size matches) whose table cannot fit
    b = bytearray(d[:48]); b[16:24] = (65535).to_bytes(4, "little") * 2
    b[16:20] = (16384).to_bytes(4, "little"); fsize(b); put("table_past_end", 6, b)
    b = bytearray(d); b[33] ^= 1; put("header_sum", 6, b)
    b = bytearray(d); b[40] ^= 4; put("table_unsummed", 6, b)
    # checksums recomputed so that later checks are reached
    b = bytearray(d); b[40:44] = (0xFFFFFFF0).to_bytes(4, "little"); put("end_huge", 7, hsum(b))
    b = bytearray(d); b[40:44] = (1).to_bytes(4, "little"); put("patch_too_small", 7, hsum(b))
    if P > 1:
        b = bytearray(d)
        e0 = ref.u32(b, 40)
        b[48:52] = (e0 - 1).to_bytes(4, "little")            # end going backwards
        put("end_backwards", 7, hsum(b))
    b = bytearray(d)                     # channels' data one byte short of the file
    b = b + b"\0"; fsize(b); put("channel_data_short", 7, hsum(b))
    s, e = patch_bounds(0, 0)
    b = bytearray(d); b[e - 1] ^= 1; put("patch_byte_flip", 8, b)
    b = bytearray(d); b[s] ^= 0x10; put("seed_flip", 8, b)
    s, e = patch_bounds(C - 1, P - 1)
    b = bytearray(d); b[e - 1] ^= 0x80; put("last_patch_flip", 8, b)
    # step 9, with patch and header sums recomputed: find a patch whose code arrays have
    # padding bits, and a width code that changes the payload size
    def geometry(i):  # groups, predictor-code bytes and byte range of patch i of channel 0
        w = min(N, W - (i % (-(-W // N))) * N)
        h = min(N, H - (i // (-(-W // N))) * N)
        return -(-w // 16) * h, -(-3 * (h - 1) // 8), 3 * (h - 1) % 8, patch_bounds(0, i)

    for i in range(P):
        G, npred, pred_bits, (s, e) = geometry(i)
        if npred and pred_bits:
            b = bytearray(d); b[s + npred] |= 0x80; put("pred_padding", 9, resum_patch(b, 0, i))
            break
    for i in range(P):
        G, npred, pred_bits, (s, e) = geometry(i)
        if G % 2:
            b = bytearray(d); b[s + 1 + npred + G // 2] |= 0x10
            put("width_padding", 9, resum_patch(b, 0, i))
            break
    s, e = patch_bounds(0, 0)
    h0 = min(N, H)
    npred = -(-3 * (h0 - 1) // 8)
    b = bytearray(d); q = b[s + 1 + npred] & 15
    b[s + 1 + npred] = (b[s + 1 + npred] & 0xF0) | ((q + 1) % 16 if q != 8 else 0)
    put("payload_sum", 9, resum_patch(b, 0, 0))
    with open(os.path.join(out, "list.txt"), "w") as f:
        for name, step in cases:
            f.write("%s %d\n" % (name, step))
    return len(cases)


def gen_mutants(srcs, out, per_source):
    """Random changes to patch bytes and table ends, with every checksum recomputed (as the
    fuzz target does): both decoders must accept the same files and decode them alike."""
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(99)
    n = 0
    for src in srcs:
        d = open(src, "rb").read()
        C, N = d[9], 1 << d[10]
        W, H = ref.u32(d, 16), ref.u32(d, 20)
        P = (-(-W // N)) * (-(-H // N))
        tend = 40 + 8 * C * P
        for _ in range(per_source):
            b = bytearray(d)
            if rng.integers(0, 3):
                for _ in range(rng.integers(1, 4)):
                    b[rng.integers(tend, len(b))] ^= int(rng.integers(1, 256))
            else:
                k = int(rng.integers(0, C * P))
                v = (ref.u32(b, 40 + 8 * k) + int(rng.integers(-3, 4))) % 2**32
                b[40 + 8 * k:44 + 8 * k] = v.to_bytes(4, "little")
            ends = [ref.u32(b, 40 + 8 * k) for k in range(C * P)]
            cs = tend
            for c in range(C):
                prev = 0
                for i in range(P):
                    s, e = cs + prev, cs + ends[c * P + i]
                    if 0 <= s <= e <= len(b):
                        o = 40 + 8 * (c * P + i) + 4
                        b[o:o + 4] = adler(b[s:e]).to_bytes(4, "little")
                    prev = ends[c * P + i]
                cs += prev
            b[32:36] = adler(b[:32] + b[40:tend]).to_bytes(4, "little")
            with open(os.path.join(out, "m%05d.l3" % n), "wb") as f:
                f.write(b)
            n += 1
    return n


def gen_bitflips(src, out):
    os.makedirs(out, exist_ok=True)
    d = open(src, "rb").read()
    n = 0
    for i in range(len(d)):
        for k in range(8):
            b = bytearray(d)
            b[i] ^= 1 << k
            with open(os.path.join(out, "f%05d_%d.l3" % (i, k)), "wb") as f:
                f.write(b)
            n += 1
    return n


# --------------------------------------------------------------------------- compare
def load_expected(path):
    if path.endswith(".npy"):
        return np.load(path)
    from PIL import Image
    im = Image.open(path)
    a = np.asarray(im)
    if a.ndim == 2:
        a = a[:, :, None]
    return a


def compare(listfile):
    fail = 0
    for line in open(listfile):
        parts = line.split()
        if not parts:
            continue
        name, refnpy, raw = parts[:3]
        exp = parts[3] if len(parts) > 3 else None
        why = []
        try:
            a = np.load(refnpy)
        except Exception:
            a = None
            why.append("reference decoder gave no pixels")
        try:
            r = np.fromfile(raw, np.uint8)
        except Exception:
            r = None
            why.append("dlprep gave no pixels")
        if a is not None and r is not None:
            if r.size != a.size:
                why.append("dlprep raw has %d bytes, reference %s = %d"
                           % (r.size, "x".join(map(str, a.shape)), a.size))
            else:
                diff = np.flatnonzero(a.reshape(-1) != r)
                if diff.size:
                    H, W, C = a.shape
                    k = int(diff[0])
                    why.append("%d bytes differ; first at (x=%d, y=%d, c=%d): reference %d, "
                               "dlprep %d" % (diff.size, (k // C) % W, k // (W * C), k % C,
                                              a.reshape(-1)[k], r[k]))
        if a is not None and exp is not None:
            e = load_expected(exp)
            if e.shape != a.shape or (e != a).any():
                why.append("reference differs from the original pixels %s" % exp)
        if why:
            print("FAIL %s: %s" % (name, "; ".join(why)))
            fail = 1
        else:
            print("ok %s %s" % (name, "x".join(map(str, a.shape))))
    return fail


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "images" and len(argv) == 3:
        print(gen_images(argv[2]))
    elif cmd == "synth" and len(argv) == 3:
        print(gen_synth(argv[2]))
    elif cmd == "hostile" and len(argv) == 4:
        print(gen_hostile(argv[2], argv[3]))
    elif cmd == "mutants" and len(argv) >= 5:
        print(gen_mutants(argv[3:], argv[2], 60))
    elif cmd == "bitflips" and len(argv) == 4:
        print(gen_bitflips(argv[2], argv[3]))
    elif cmd == "compare" and len(argv) == 3:
        return compare(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
