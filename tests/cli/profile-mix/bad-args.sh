#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Usage errors exit 2 with the hint; a missing dataset is a failure (1); nothing is written.
expect_exit 2 dlprep profile-mix
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --search simplex
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --storage-bw fast -o r.json
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --storage-bw 0MB/s
# 500 B/s is a unit left out; the message names the option.
dlprep profile-mix "$SAMPLE_DATA/images" --storage-bw 500 2>err.txt && fail "--storage-bw 500 taken"
grep -q -- "--storage-bw: '500' without a unit" err.txt || fail "message: $(cat err.txt)"
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --formats png,gif
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --formats png,png
# Two variants of one format: a mix that convert-dataset could not take.
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --formats png:0,bmp,png:9 2>err.txt
grep -qF -- "--formats names png twice (png:0, png:9)" err.txt || fail "message: $(cat err.txt)"
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --sample 0
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --compute-rate -5
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --verify --no-verify
dlprep profile-mix "$SAMPLE_DATA/images" --search simplex 2>err.txt || true
grep -q "try 'dlprep profile-mix --help'" err.txt || fail "no hint: $(cat err.txt)"
expect_exit 1 dlprep profile-mix does-not-exist --storage-bw 50MB/s -o r.json
[ ! -e r.json ] || fail "report written despite an error"
# A work folder inside a dlprep dataset would put strays in its data/.
dlprep -q convert-dataset "$SAMPLE_DATA/images" ds --to png
expect_exit 2 dlprep profile-mix ds --work-dir ds/data 2>err.txt
grep -qF -- "--work-dir ds/data: is inside the dlprep dataset being profiled" err.txt || fail "message: $(cat err.txt)"
# An output that is a folder fails before the measuring, and the other output is not written.
mkdir folder
expect_exit 1 dlprep profile-mix "$SAMPLE_DATA/images" -o r.json --plot folder 2>err.txt
grep -qF -- "--plot folder: is a directory" err.txt || fail "message: $(cat err.txt)"
grep -q "measur" err.txt && fail "measured before failing: $(cat err.txt)"
[ ! -e r.json ] || fail "report written beside a plot that failed"

# Numeric options say what is wrong in one short line: no 300-digit bound, no "not in range" for
# a word, and nan refused.
check_message() {  # EXPECTED_PART ARGS...
  local want=$1
  shift
  expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --no-verify "$@" 2>err.txt
  grep -qF -- "$want" err.txt || fail "$*: $(cat err.txt)"
  [ "$(head -1 err.txt | wc -c)" -lt 120 ] || fail "$*: a long message: $(head -1 err.txt)"
}
check_message "--compute-rate: '0' is not a positive number" --compute-rate 0
check_message "--compute-rate: 'nan' is not a number" --compute-rate nan
check_message "--sample: 'abc' is not a number" --sample abc
check_message "--sample: '1.5' is not a whole number" --sample 1.5
check_message "--sample: '0' is not from 1 to 100000" --sample 0
check_message "--pass-seconds: 'nan' is not a number" --pass-seconds nan
check_message "--output: given more than once" -o a.json -o b.json
check_message "--output: its value (FILE) is missing" -o
# A --work-dir that does not exist is a typo, not a folder to create with its parents.
check_message "--work-dir typo/deeper: no such directory" --work-dir typo/deeper
[ ! -e typo ] || fail "--work-dir's missing folder was created"
# Whole numbers are decimal: 010 is 10 (not octal 8), 0200000 is out of --sample's range.
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --no-verify --sample 1e3 2>/dev/null
check_message "--sample: '200000' is not from 1 to 100000" --sample 0200000
check_message "--sample: '0x10' is not a decimal number" --sample 0x10
dlprep -q --json profile-mix "$SAMPLE_DATA/images" --formats png,bmp --sample 010 --storage-bw 50MB/s \
  --no-verify | json_check 'd["sample_images"] == 10'

# The report and the plot never replace what is profiled (a dataset's dataset.json, an image of
# the tree, an image a list names): exit 2 before any measuring.
mkdir -p tree/cat
cp "$SAMPLE_DATA/images/kay_256x256.png" tree/cat/a.png
cp "$SAMPLE_DATA/images/kay_256x256.png" listed.png
printf 'listed.png\tcat\n' >list.txt
expect_exit 2 dlprep profile-mix tree --no-verify -o tree/cat/a.png 2>err-in.txt
grep -q "is an image (one being profiled?)" err-in.txt || fail "$(cat err-in.txt)"
expect_exit 2 dlprep profile-mix list.txt --no-verify -o list.txt
dlprep -q convert-dataset tree ds --to png
expect_exit 2 dlprep profile-mix ds --no-verify -o ds/dataset.json 2>err-ds.txt
grep -q "is inside the dlprep dataset being profiled" err-ds.txt || fail "$(cat err-ds.txt)"
expect_exit 2 dlprep profile-mix tree --no-verify -o r.json --plot ./r.json
expect_exit 2 dlprep profile-mix list.txt --no-verify -o listed.png
cmp "$SAMPLE_DATA/images/kay_256x256.png" tree/cat/a.png || fail "an input was written over"
cmp "$SAMPLE_DATA/images/kay_256x256.png" listed.png || fail "a listed image was written over"

# A plot that cannot be written fails at once, and leaves no report either.
touch not-a-dir
expect_exit 1 dlprep profile-mix tree --no-verify -o r.json --plot not-a-dir/p.svg
[ ! -e r.json ] || fail "report left by a run that failed"
expect_exit 2 dlprep profile-mix tree --no-verify -o - --plot -
