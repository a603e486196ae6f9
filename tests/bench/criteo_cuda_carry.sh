#!/bin/sh
# Prepares carry/criteo-deps/ (git-ignored) on the build machine: what the GPU machine needs to
# configure and build dlprep's CUDA Criteo backend, its tests and its benchmark, and may lack
# (it has no network). A relocatable CMake prefix made from Debian 12's packages:
#   include/CLI + share/cmake/CLI11             (libcli11-dev, header-only)
#   include/nlohmann + share/cmake/nlohmann_json (nlohmann-json3-dev, header-only)
#   include/doctest                              (doctest-dev, header-only)
#   include/zlib.h, zconf.h, lib/libz.a          (zlib1g-dev; PIC, links into PIE on Ubuntu 24.04)
#   bin/pkg-config                               a stand-in that knows no package, for a machine
#                                                without pkg-config (the top CMakeLists.txt requires
#                                                one; the codecs it finds are off for this build)
# About 3 MB. Pass it as carry ["carry/criteo-deps"] and configure with
# -DCMAKE_PREFIX_PATH=$PWD/carry/criteo-deps (tests/bench/criteo_cuda_bench.md).
#
# Usage: tests/bench/criteo_cuda_carry.sh   (from the repository root)
set -eu
D=carry/criteo-deps
rm -rf "$D"
mkdir -p "$D/include" "$D/share/cmake" "$D/lib" "$D/bin"
cp -r /usr/include/CLI "$D/include/"
cp -r /usr/share/cmake/CLI11 "$D/share/cmake/"
cp -r /usr/include/nlohmann "$D/include/"
cp -r /usr/share/cmake/nlohmann_json "$D/share/cmake/"
cp -r /usr/include/doctest "$D/include/"
cp /usr/include/zlib.h /usr/include/zconf.h "$D/include/"
cp /usr/lib/x86_64-linux-gnu/libz.a "$D/lib/"
cat > "$D/bin/pkg-config" <<'SH'
#!/bin/sh
# Stand-in pkg-config (tests/bench/criteo_cuda_carry.sh): a version, and no package at all.
[ "${1:-}" = "--version" ] && { echo 0.29.2; exit 0; }
exit 1
SH
chmod +x "$D/bin/pkg-config"
du -sh "$D"
