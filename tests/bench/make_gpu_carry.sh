#!/usr/bin/env bash
# Prepares, on the build machine, what the GPU session (tests/bench/GPU-SESSION.md, issues 4 and 5)
# carries to the device machine: the git-ignored folder carry/ with
#   carry/deps/      what the device machine may lack (it has no network): the headers of CLI11,
#                    nlohmann/json and doctest with relocatable CMake configs, Debian 12's static
#                    zlib and libpng with their headers (they link on its newer system), and a
#                    stand-in pkg-config that knows no package (CMake requires the program; the
#                    codecs found through it are off in the GPU build);
#   carry/prebuilt/  the session's binaries (gpu_session.sh prebuild: the device machine's build and
#                    the l3-tune builds), made here so that no device time goes to compiling and no
#                    compiler surprise there can cost the session; built from a copy of the working
#                    tree at /tmp/dlprep-gpu, the path that the device machine makes a link to its
#                    checkout, and stamped with the sources' fingerprint (the device machine
#                    builds for itself when the sources differ or the binaries do not run there);
#   carry/l3bench/   a subset of the benchmark photo sets (BENCHMARKS.md): FHD_COUNT pictures of
#                    the FHD set and NATIVE_COUNT of the native set, each as L3 (dlprep l3 encode,
#                    automatic patch) and as JPEG q90 4:2:0 (Pillow, libjpeg-turbo) made from the
#                    same pixels, in fhd/, fhd_jpeg/, native/, native_jpeg/ with matching names.
# The whole photo set (47 FHD PNGs, ~93 MB) is over the 64 MiB a device call carries with the
# tree; the benchmark repeats the subset to fill its batches, which is how the issue's batches of
# 256 are made anyway. The Criteo benchmark generates its rows on the device machine.
# Rerun it after every change to the sources: the prebuilt binaries must match them.
#
# Usage: tests/bench/make_gpu_carry.sh     (from anywhere; paths from the repository root)
# Environment: DLPREP (default build/dlprep, any build with PNG), CACHE (tests/bench/cache, made
# by run_image_bench.sh / make_photo_sets.py), FHD_COUNT (16), NATIVE_COUNT (2),
# LIMIT_MB (62: what carry/ and the working tree may take together of the 64 MiB a call carries,
# leaving room for the tree to grow a little before the session).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
DLPREP=${DLPREP:-build/dlprep}
CACHE=${CACHE:-tests/bench/cache}
FHD_COUNT=${FHD_COUNT:-16}
NATIVE_COUNT=${NATIVE_COUNT:-2}
LIMIT_MB=${LIMIT_MB:-62}
PYTHON=/usr/bin/python3  # Debian's, with python3-pil

[[ -x $DLPREP ]] || { echo "make_gpu_carry.sh: $DLPREP not found (set DLPREP)" >&2; exit 2; }
[[ -d $CACHE/fhd && -d $CACHE/native ]] || {
  echo "make_gpu_carry.sh: no photo sets in $CACHE: run tests/bench/make_photo_sets.py $CACHE" >&2
  exit 2
}
grep -qx '/carry/' .gitignore || { echo "make_gpu_carry.sh: carry/ is not git-ignored" >&2; exit 2; }

# 1. Build dependencies (with their files' times, so that a rerun rebuilds nothing for them).
deps=carry/deps
rm -rf "$deps"
mkdir -p "$deps/include" "$deps/lib" "$deps/share/cmake"
cp -a /usr/include/CLI /usr/include/nlohmann /usr/include/doctest "$deps/include/"
cp -a /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
cp -p /usr/include/zlib.h /usr/include/zconf.h "$deps/include/"
cp -p /usr/include/png.h /usr/include/pngconf.h /usr/include/pnglibconf.h "$deps/include/"
cp -p /usr/lib/x86_64-linux-gnu/libz.a /usr/lib/x86_64-linux-gnu/libpng16.a "$deps/lib/"
mkdir -p "$deps/bin"
cat >"$deps/bin/pkg-config" <<'SH'
#!/bin/sh
# Stand-in pkg-config (tests/bench/make_gpu_carry.sh): a version, and no package at all.
[ "${1:-}" = "--version" ] && { echo 0.29.2; exit 0; }
exit 1
SH
chmod +x "$deps/bin/pkg-config"
{
  echo "Copied by tests/bench/make_gpu_carry.sh from Debian 12 packages:"
  dpkg-query -W -f '  ${Package} ${Version}\n' libcli11-dev nlohmann-json3-dev doctest-dev \
    zlib1g-dev libpng-dev 2>/dev/null || true
} > "$deps/SOURCES.txt"

# 2. The binaries, built in a copy of the working tree (tracked and untracked, not ignored
# files; carry/deps beside them) that keeps its build folders, so that a rerun rebuilds only
# what changed: unchanged files keep their times.
src=/tmp/dlprep-gpu
[[ -L $src ]] && rm "$src"  # a dry run's link (GPU-SESSION.md)
mkdir -p "$src"
find "$src" -mindepth 1 -maxdepth 1 ! -name 'build-gpu*' -exec rm -rf {} +
git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$src"
mkdir -p "$src/carry"
cp -a "$deps" "$src/carry/"
rm -rf carry/prebuilt
(cd "$src" && OUT="$src/build-gpu-out" PREBUILD_DIR="$root/carry/prebuilt" BUDGET=3600 \
   bash tests/bench/gpu_session.sh prebuild) >carry/prebuild.log 2>&1 ||
  { tail -30 carry/prebuild.log; echo "make_gpu_carry.sh: prebuild failed: carry/prebuild.log" >&2
    exit 1; }
rm carry/prebuild.log

# 3. The photo subset: evenly spaced over the name-sorted sets (the same rule as
# run_image_bench.sh's FHD_LIMIT/NATIVE_LIMIT); native pictures among the smallest native size
# (2560x1600) so that a few fit.
pick() {  # pick COUNT FILE...: COUNT files evenly spaced over the list
  local count=$1
  shift
  local n=$#
  local files=("$@")
  ((count > n)) && count=$n
  for ((i = 0; i < count; i++)); do echo "${files[$((i * n / count))]}"; done
}
set_dir=carry/l3bench
rm -rf "$set_dir"
mkdir -p "$set_dir"/{fhd,fhd_jpeg,native,native_jpeg}
mapfile -t fhd < <(pick "$FHD_COUNT" "$CACHE"/fhd/*.png)
mapfile -t native < <(pick "$NATIVE_COUNT" "$CACHE"/native/*_2560x1600.png)
"$DLPREP" -q l3 encode "${fhd[@]}" -o "$set_dir/fhd/"
"$DLPREP" -q l3 encode "${native[@]}" -o "$set_dir/native/"
"$PYTHON" - "$set_dir" "${fhd[@]}" -- "${native[@]}" <<'PY'
import os, sys
from PIL import Image
out, rest = sys.argv[1], sys.argv[2:]
split = rest.index("--")
for folder, files in (("fhd_jpeg", rest[:split]), ("native_jpeg", rest[split + 1:])):
    for png in files:
        name = os.path.splitext(os.path.basename(png))[0]
        # q90, 4:2:0, baseline: what BENCHMARKS.md's JPEG row and the issue's nvJPEG row mean.
        Image.open(png).convert("RGB").save(os.path.join(out, folder, name + ".jpg"), quality=90,
                                            subsampling=2, optimize=False, progressive=False)
PY

# Bytes, not disk blocks: the call counts what travels, and a block per small file would count
# the tree's ~1,700 files at twice their 3.5 MB.
carry_kb=$(du -sk --apparent-size carry | cut -f1)
tree_kb=$(git ls-files -z -co --exclude-standard |
  du -ck --apparent-size --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "carry/: $((carry_kb / 1024)) MiB; with the working tree: $(((carry_kb + tree_kb) / 1024)) MiB"
du -sh "$deps" carry/prebuilt "$set_dir"/*
echo "fhd: ${#fhd[@]} pictures; native: ${#native[@]} ($(for f in "${native[@]}"; do basename "$f" .png; done | tr '\n' ' '))"
if ((carry_kb + tree_kb > LIMIT_MB * 1024)); then
  echo "make_gpu_carry.sh: carry/ and the tree take more than $LIMIT_MB MiB: lower FHD_COUNT" >&2
  exit 1
fi
