#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --help goes to stdout, exits 0, and lists every command with a description.
dlprep --help >help.txt
grep -q '^Usage: dlprep' help.txt || fail "no usage line"
grep -Eq '^  info +show format' help.txt || fail "info not listed"
grep -Eq '^  l3 +encode, decode' help.txt || fail "l3 not listed"
grep -q -- '--jobs' help.txt || fail "global options not listed"
# Every subcommand teaches: its options and examples.
# Lines fit 100 columns: long descriptions wrap under their column (a single word may not).
for cmd in "info" "l3" "l3 encode" "l3 decode" "l3 verify" "l3 bench" "criteo-preprocess" \
    "convert-dataset" "dataset" "dataset info" "dataset verify" "dataset merge" "profile-mix"; do
  dlprep $cmd --help >sub.txt || fail "dlprep $cmd --help failed"
  grep -q "^Usage: dlprep $cmd" sub.txt || fail "dlprep $cmd --help: no usage line"
  grep -q '^Examples:' sub.txt || fail "dlprep $cmd --help: no examples"
  long=$(awk 'length($0) > 100' sub.txt)
  [ -z "$long" ] || fail "dlprep $cmd --help: lines over 100 columns: $long"
done
[ -z "$(awk 'length($0) > 100' help.txt)" ] || fail "dlprep --help: lines over 100 columns"
dlprep -h | cmp -s - help.txt || fail "-h differs from --help"
