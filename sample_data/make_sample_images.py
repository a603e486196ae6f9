#!/usr/bin/python3
# Builds sample_data/images/ from Debian's wallpaper packages, as extracted by
# tests/bench/make_photo_sets.py into tests/bench/cache/. Kept to show how each sample was made.
import os
from PIL import Image
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W = os.path.join(ROOT, "tests/bench/cache/extracted/usr/share/wallpapers")
OUT = os.path.join(ROOT, "sample_data/images")

def src(name, f):
    return Image.open(f"{W}/{name}/contents/images/{f}")

def crop(im, box):
    return im.crop(box)

jobs = []
def job(out, pkgfile, how, im, **save):
    path = os.path.join(OUT, out)
    im.save(path, **save)
    jobs.append((out, pkgfile, how, im.size, im.mode))

# PNG RGB
im = src("Autumn", "640x480.jpg").convert("RGB").resize((320, 240), Image.LANCZOS)
job("autumn_320x240.png", "Autumn/contents/images/640x480.jpg", "resized 640x480 -> 320x240 (Lanczos)", im, optimize=False)
im = crop(src("BytheWater", "1280x800.jpg").convert("RGB"), (600, 300, 857, 493))
job("bythewater_257x193.png", "BytheWater/contents/images/1280x800.jpg", "crop 257x193 at (600,300)", im)
im = src("ColdRipple", "1920x1080.jpg").convert("RGB").resize((640, 360), Image.LANCZOS)
job("coldripple_640x360.png", "ColdRipple/contents/images/1920x1080.jpg", "resized 1920x1080 -> 640x360 (Lanczos)", im)
im = crop(src("Kite", "1280x1024.jpg").convert("RGB"), (0, 100, 199, 401))
job("kite_199x301.png", "Kite/contents/images/1280x1024.jpg", "crop 199x301 at (0,100)", im)
im = src("DarkestHour", "800x600.jpg").convert("RGB").resize((300, 225), Image.LANCZOS)
job("darkesthour_300x225.png", "DarkestHour/contents/images/800x600.jpg", "resized 800x600 -> 300x225 (Lanczos)", im)
im = crop(src("Kay", "1080x1920.png").convert("RGB"), (400, 800, 656, 1056))
job("kay_256x256.png", "Kay/contents/images/1080x1920.png", "crop 256x256 at (400,800) (artwork, not a photo)", im)
# PNG RGBA with a real alpha gradient (radial: opaque centre, transparent corners)
im = src("FallenLeaf", "640x480.jpg").convert("RGB").resize((256, 192), Image.LANCZOS)
alpha = Image.radial_gradient("L").resize((256, 192)).point(lambda v: 255 - min(255, v))
rgba = im.copy(); rgba.putalpha(alpha)
job("fallenleaf_rgba_256x192.png", "FallenLeaf/contents/images/640x480.jpg", "resized to 256x192, radial alpha gradient added", rgba)
# PNG gray
im = src("Grey", "640x480.jpg").convert("L").resize((320, 240), Image.LANCZOS)
job("grey_gray_320x240.png", "Grey/contents/images/640x480.jpg", "resized to 320x240, converted to 8-bit gray (PIL 'L')", im)
# JPEG q90
im = crop(src("EveningGlow", "800x600.jpg").convert("RGB"), (40, 360, 360, 600))
job("eveningglow_320x240.jpg", "EveningGlow/contents/images/800x600.jpg", "crop 320x240 at (40,360), re-encoded JPEG q90 4:2:0", im, quality=90, subsampling=2)
# WebP lossless and lossy
im = src("PastelHills", "640x480.jpg").convert("RGB").resize((320, 240), Image.LANCZOS)
job("pastelhills_lossless_320x240.webp", "PastelHills/contents/images/640x480.jpg", "resized to 320x240, WebP lossless", im, lossless=True, quality=100, method=6)
im = src("summer_1am", "800x600.jpg").convert("RGB").resize((320, 240), Image.LANCZOS)
job("summer1am_lossy_320x240.webp", "summer_1am/contents/images/800x600.jpg", "resized 800x600 -> 320x240, WebP lossy q80", im, quality=80)
# BMP 24-bit
im = crop(src("OneStandsOut", "640x480.jpg").convert("RGB"), (200, 160, 361, 281))
job("onestandsout_161x121.bmp", "OneStandsOut/contents/images/640x480.jpg", "crop 161x121 at (200,160), 24-bit BMP", im)
# PPM and PGM
im = src("FlyingKonqui", "640x480.png").convert("RGB").resize((200, 150), Image.LANCZOS)
job("flyingkonqui_200x150.ppm", "FlyingKonqui/contents/images/640x480.png", "resized to 200x150, binary PPM (P6)", im)
im = crop(src("Path", "640x480.jpg").convert("L"), (220, 250, 421, 401))
job("path_gray_201x151.pgm", "Path/contents/images/640x480.jpg", "crop 201x151 at (220,250), gray, binary PGM (P5)", im)

for j in jobs:
    print(j)
