#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# The BMP kinds Pillow reads (1, 4, 8-bit palettes, gray and colour; 16-bit 5-5-5 and 5-6-5 with
# and without masks, every 16-bit value; RLE8 and RLE4) are read as Pillow reads them, pixel for
# pixel. Pillow 9.4 drops the last pixel of an RLE4 literal run of odd length (the unit test
# checks those against the specification), so the RLE4 file here has even literals only.
/usr/bin/python3 -c 'import PIL, numpy' 2>/dev/null ||
  skip "Pillow or NumPy is not installed (Debian packages python3-pil, python3-numpy)"
/usr/bin/python3 - <<'PY'
import random, struct
from PIL import Image

random.seed(1)
W, H = 37, 11


def bmp(w, h, bpp, comp, pix, pal=b"", masks=b"", dib=40):
    info = struct.pack("<IiiHHIIiiII", dib, w, h, 1, bpp, comp, len(pix), 2835, 2835, len(pal) // 4, 0)
    extra = masks
    if dib > 40:
        info += masks + b"\0" * (dib - 40 - len(masks))
        extra = b""
    off = 14 + len(info) + len(extra) + len(pal)
    return b"BM" + struct.pack("<IHHI", off + len(pix), 0, 0, off) + info + extra + pal + pix


def padded(rows):
    return b"".join(r + b"\0" * (-len(r) % 4) for r in rows)


def palette(n, kind):
    if kind == "gray":
        return b"".join(bytes([v, v, v, 0]) for v in sorted(random.sample(range(256), n)))
    if kind == "bw":
        return bytes([0, 0, 0, 0, 255, 255, 255, 0])
    return b"".join(bytes([random.randrange(256) for _ in range(3)]) + b"\0" for _ in range(n))


def pack(row, bpp):
    if bpp == 8:
        return bytes(row)
    per = 8 // bpp
    row = row + [0] * (-len(row) % per)
    return bytes(sum(row[i + k] << (8 - bpp * (k + 1)) for k in range(per)) for i in range(0, len(row), per))


def rle(bpp, rows):
    out = bytearray()
    for r in rows:
        x = 0
        while x < W:
            n = min(random.randrange(1, 12), W - x)
            if bpp == 4 and n % 2:
                n -= 1
            if n >= 3 and random.random() < 0.5:  # a literal
                body = pack(r[x : x + n], bpp)
                out += bytes([0, n]) + body + b"\0" * (len(body) % 2)
            else:  # a run
                n = max(n, 1)
                for i in range(n):
                    r[x + i] = r[x]
                out += bytes([n, r[x] * 17 if bpp == 4 else r[x]])
            x += n
        out += b"\0\0"
    return bytes(out + b"\0\1")


files = {}
for bpp in (1, 4, 8):
    for kind in ("colour", "gray", "bw") if bpp == 1 else ("colour", "gray"):
        rows = [[random.randrange(1 << bpp) for _ in range(W)] for _ in range(H)]
        files[f"p{bpp}_{kind}"] = bmp(W, H, bpp, 0, padded([pack(r, bpp) for r in rows]), palette(1 << bpp, kind))
values = list(range(65536))
random.shuffle(values)
pix = padded([b"".join(struct.pack("<H", values[y * 256 + x]) for x in range(256)) for y in range(256)])
files["rgb555"] = bmp(256, 256, 16, 0, pix)
files["bitfields555"] = bmp(256, 256, 16, 3, pix, masks=struct.pack("<III", 0x7C00, 0x3E0, 0x1F))
files["bitfields565"] = bmp(256, 256, 16, 3, pix, masks=struct.pack("<III", 0xF800, 0x7E0, 0x1F))
files["bitfields565_v4"] = bmp(256, 256, 16, 3, pix, masks=struct.pack("<IIII", 0xF800, 0x7E0, 0x1F, 0), dib=108)
for bpp, comp in ((8, 1), (4, 2)):
    rows = [[random.randrange(1 << bpp) for _ in range(W)] for _ in range(H)]
    files[f"rle{bpp}"] = bmp(W, H, bpp, comp, rle(bpp, rows), palette(1 << bpp, "colour"))
for name, data in files.items():
    open(name + ".bmp", "wb").write(data)
    image = Image.open(name + ".bmp")
    gray = "gray" in name or "bw" in name
    image.convert("L" if gray else "RGB").save(name + ".pillow." + ("pgm" if gray else "ppm"))
PY
for f in *.bmp; do
  name=${f%.bmp}
  ext=ppm
  case $name in *gray | *bw) ext=pgm ;; esac
  dlprep -q l3 encode "$f" -o "$name.l3" || fail "$f: not read"
  dlprep -q l3 decode "$name.l3" -o "$name.dlprep.$ext"
  cmp -s "$name.dlprep.$ext" "$name.pillow.$ext" || fail "$f: the pixels differ from Pillow's"
done
[ "$(ls *.bmp | wc -l)" = 13 ] || fail "expected 13 files, made $(ls *.bmp | wc -l)"
