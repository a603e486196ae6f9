#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A -j far above what the open-file limit allows: verify uses fewer threads, says so, and
# passes (it reported hundreds of healthy samples as "cannot open: Too many open files" and
# "do not decode"). With no room for even one sample's file, it stops with one error, exit 1.
mkdir -p src/a
make_pnm src/a/img0.ppm 8 8 3 1
/usr/bin/python3 -c 'import os
for i in range(1, 2000): os.link("src/a/img0.ppm", "src/a/img%d.ppm" % i)'
dlprep -q convert-dataset src ds --to l3
dlprep -q convert-dataset src tar --to l3 --shards 64KiB
# The limited shells are redirected from outside: they could not open the files themselves.
for d in ds tar; do
  (
    ulimit -n 16
    exec dlprep -j64 dataset verify $d
  ) >out.txt 2>err.txt || fail "$d: $(head -5 err.txt)"
  grep -q "^$d: ok, 2000 samples" out.txt || fail "$d: $(cat out.txt)"
  grep -qx "dlprep: warning: dataset verify: -j64 would open more files than the limit allows (ulimit -n): using [0-9]* threads\?" err.txt ||
    fail "$d: no warning: $(cat err.txt)"
  [ "$(wc -l <err.txt)" = 1 ] || fail "$d: $(head -5 err.txt)"
done
# Room for the index alone. Not in a sanitizer build: its runtime checks memory through
# a pipe, and with no descriptor to spare it reports each thread's start as a bad object.
if sanitized_build; then
  echo "skipped the no-room case: a sanitizer build needs descriptors of its own" >&2
  exit 0
fi
code=0
with_room_for 1 dlprep -j4 dataset verify tar >out.txt 2>err.txt || code=$?
[ $code = 1 ] || fail "exit $code: $(head -5 err.txt)"
grep -qx "dlprep: error: dataset verify: out of file descriptors (Too many open files): raise the limit (ulimit -n) or use fewer threads (-j)" err.txt ||
  fail "$(head -5 err.txt)"
[ "$(grep -c error err.txt)" = 1 ] || fail "$(head -5 err.txt)"
# The walk of data/ for files the index does not name holds one descriptor at a time: 40 folders
# deep it finds the orphan with room for a dozen (holding one a level, it was cut short there).
deep=src2/c/$(printf 'd/%.0s' $(seq 40))
mkdir -p "$deep"
make_pnm "$deep/a.ppm" 8 8 3 1
dlprep -q convert-dataset src2 deep --to l3
cp "deep/data/c/$(printf 'd/%.0s' $(seq 40))a.l3" "deep/data/c/$(printf 'd/%.0s' $(seq 40))orphan.l3"
for limited in "" "with_room_for 12"; do
  code=0
  $limited dlprep -j1 dataset verify deep >out.txt 2>err.txt || code=$?
  [ $code = 3 ] && grep -q "orphan.l3: in data/ but not in the index" err.txt ||
    fail "${limited:-no limit}: orphan not found: exit $code: $(head -5 err.txt)"
done
