#!/usr/bin/python3
"""Builds the benchmark photo sets (BENCHMARKS.md) from Debian's wallpaper packages.

Usage: make_photo_sets.py CACHE_DIR
Fetches gnome-backgrounds and plasma-workspace-wallpapers with `apt-get download` (never
committed), extracts them, and writes:
  CACHE_DIR/native/NAME.png  every raster wallpaper >= 1920x1080 and not taller than wide, 8-bit RGB
  CACHE_DIR/fhd/NAME.png     the same, centre-cropped to 16:9, Lanczos-resized to 1920x1080, PNG-6
  CACHE_DIR/fhd_ppm/NAME.ppm the FHD set as binary PPM (for tools without a PNG reader)
  CACHE_DIR/sets.tsv         one line per image: name, source file, native width x height, mode
The packages ship each wallpaper once and many symbolic links to it (Autumn/640x480.jpg ->
2560x1600.jpg): links are skipped, so each picture counts once (47 images with bookworm's
packages). Files in the set folders that are not in the set (from an older selection) are removed.
Reruns reuse what is already there. Needs Debian's python3-pil (/usr/bin/python3).
"""
import os
import subprocess
import sys

from PIL import Image

PACKAGES = ["gnome-backgrounds", "plasma-workspace-wallpapers"]
RASTER = (".jpg", ".jpeg", ".png", ".webp")


def fetch(cache):
    debs = os.path.join(cache, "debs")
    extracted = os.path.join(cache, "extracted")
    os.makedirs(debs, exist_ok=True)
    for pkg in PACKAGES:
        if not any(f.startswith(pkg + "_") for f in os.listdir(debs)):
            subprocess.run(["apt-get", "download", pkg], cwd=debs, check=True)
    if not os.path.isdir(extracted):
        tmp = extracted + ".tmp"
        os.makedirs(tmp, exist_ok=True)
        for f in sorted(os.listdir(debs)):
            if f.endswith(".deb"):
                subprocess.run(["dpkg", "-x", os.path.join(debs, f), tmp], check=True)
        os.rename(tmp, extracted)
    return extracted


def sources(extracted):
    """Every raster file once, in a fixed order: symbolic links and second names are skipped."""
    seen = set()
    for root, dirs, files in os.walk(extracted):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(root, f)
            if not f.lower().endswith(RASTER) or os.path.islink(path):
                continue
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            yield path


def set_name(path, extracted):
    rel = os.path.relpath(path, extracted)
    parts = [p for p in rel.split(os.sep) if p not in ("usr", "share", "contents", "backgrounds", "wallpapers")]
    return "_".join(os.path.splitext(p)[0] for p in parts)


def centre_crop_16_9(img):
    w, h = img.size
    if w * 9 > h * 16:
        cw = h * 16 // 9
        x = (w - cw) // 2
        return img.crop((x, 0, x + cw, h))
    ch = w * 9 // 16
    y = (h - ch) // 2
    return img.crop((0, y, w, y + ch))


def main():
    cache = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "tests/bench/cache")
    extracted = fetch(cache)
    for sub in ("native", "fhd", "fhd_ppm"):
        os.makedirs(os.path.join(cache, sub), exist_ok=True)
    count = 0
    raw_fhd = 0
    raw_native = 0
    wanted = set()
    manifest = []
    for src in sources(extracted):
        with Image.open(src) as im:
            w, h = im.size
            if w < 1920 or h < 1080 or h > w:
                continue
            name = set_name(src, extracted)
            native = os.path.join(cache, "native", name + ".png")
            fhd = os.path.join(cache, "fhd", name + ".png")
            ppm = os.path.join(cache, "fhd_ppm", name + ".ppm")
            count += 1
            wanted.add(name)
            manifest.append(f"{name}\t{os.path.relpath(src, extracted)}\t{w}x{h}\t{im.mode}")
            raw_native += w * h * 3
            raw_fhd += 1920 * 1080 * 3
            if os.path.exists(native) and os.path.exists(fhd) and os.path.exists(ppm):
                continue
            rgb = im.convert("RGB")
            small = centre_crop_16_9(rgb).resize((1920, 1080), Image.LANCZOS)
            for img, path, kw in ((rgb, native, {"compress_level": 6}),
                                  (small, fhd, {"compress_level": 6}),
                                  (small, ppm, {})):
                tmp = path + ".tmp"
                img.save(tmp, format="PNG" if path.endswith(".png") else "PPM", **kw)
                os.replace(tmp, path)
    for sub, ext in (("native", ".png"), ("fhd", ".png"), ("fhd_ppm", ".ppm")):
        folder = os.path.join(cache, sub)
        for f in os.listdir(folder):
            if not (f.endswith(ext) and f[: -len(ext)] in wanted):
                os.remove(os.path.join(folder, f))  # stale: not in this selection (or a .tmp)
    with open(os.path.join(cache, "sets.tsv.tmp"), "w") as out:
        out.write("".join(line + "\n" for line in manifest))
    os.replace(os.path.join(cache, "sets.tsv.tmp"), os.path.join(cache, "sets.tsv"))
    print(f"{count} images; native set {raw_native / 1e6:.0f} MB raw, FHD set {raw_fhd / 1e6:.0f} MB raw")


if __name__ == "__main__":
    main()
