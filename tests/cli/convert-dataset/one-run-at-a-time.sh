#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A second run into a DST that another run is writing (its lock held here through flock(1))
# stops at once with exit 1 and writes nothing; so does criteo-preprocess into a locked OUTDIR.
command -v flock >/dev/null || skip "no flock(1) here"
mkdir -p src/a dst out
cp "$SAMPLE_DATA"/images/*.png src/a/
# hold DIR: a background process that holds DIR's lock until it is killed ($holder).
hold() {
  (exec 9<"$1" && flock 9 && exec sleep 60) </dev/null >/dev/null 2>&1 &
  holder=$!
  for _ in $(seq 1 200); do flock -n "$1" true 2>/dev/null || return 0; sleep 0.02; done
  fail "could not take the lock of $1"
}
release() {
  kill "$holder"
  wait "$holder" 2>/dev/null || true
}
trap 'kill $holder 2>/dev/null || true' EXIT

hold dst
code=0
dlprep -q convert-dataset src dst --to l3 2>err.txt || code=$?
[ "$code" = 1 ] || fail "convert-dataset into a locked DST exited $code, expected 1"
grep -q "dst: another dlprep run is writing into it" err.txt || fail "message: $(cat err.txt)"
[ -z "$(ls -A dst)" ] || fail "something was written into the locked DST: $(ls -A dst)"
release
dlprep -q convert-dataset src dst --to l3
dlprep -q dataset verify dst

hold out
code=0
dlprep -q criteo-preprocess "$SAMPLE_DATA/criteo/deepctr_200.tsv" -o out 2>err.txt || code=$?
[ "$code" = 1 ] || fail "criteo-preprocess into a locked OUTDIR exited $code, expected 1"
grep -q "out: another dlprep run is writing into it" err.txt || fail "message: $(cat err.txt)"
[ -z "$(ls -A out)" ] || fail "something was written into the locked OUTDIR: $(ls -A out)"
release
dlprep -q criteo-preprocess "$SAMPLE_DATA/criteo/deepctr_200.tsv" -o out
[ -f out/day_0_sparse.npy ] || fail "no output after the lock was released"
