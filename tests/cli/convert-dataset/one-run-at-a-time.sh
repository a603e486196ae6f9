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
# dataset verify of a dataset that a run is writing now says so, instead of advising a rerun.
mkdir -p inc/c
cp "$SAMPLE_DATA"/images/kay_256x256.png inc/c/
printf '\x89PNG\r\n\x1a\nGARBAGE' >inc/c/bad.png
expect_exit 1 dlprep -q convert-dataset inc incds --to l3 2>/dev/null
expect_exit 3 flock incds dlprep dataset verify incds 2>err.txt
grep -q 'the dataset is incomplete: a conversion or merge is writing into it now' err.txt ||
  fail "verify while held: $(cat err.txt)"
expect_exit 3 dlprep dataset verify incds 2>err.txt
grep -q 'interrupted or failed); rerun the command that made it' err.txt || fail "$(cat err.txt)"
# So does dataset info.
flock incds dlprep dataset info incds | grep -q '^dataset:  incds (incomplete: a conversion or merge is writing into it now)' ||
  fail "info while held: $(flock incds dlprep dataset info incds)"
dlprep dataset info incds | grep -q '^dataset:  incds (incomplete: rerun the conversion or merge that made it)' ||
  fail "info: $(dlprep dataset info incds)"
