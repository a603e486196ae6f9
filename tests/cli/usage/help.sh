#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --help goes to stdout, exits 0, and lists every command with a description.
dlprep --help >help.txt
grep -q '^Usage: dlprep' help.txt || fail "no usage line"
grep -Eq '^  info +show format' help.txt || fail "info not listed"
grep -Eq '^  l3 +encode, decode' help.txt || fail "l3 not listed"
grep -q -- '--jobs' help.txt || fail "global options not listed"
# Every subcommand teaches: its options and examples.
for cmd in "info" "l3" "l3 encode" "l3 decode" "l3 verify" "l3 bench"; do
  dlprep $cmd --help >sub.txt || fail "dlprep $cmd --help failed"
  grep -q "^Usage: dlprep $cmd" sub.txt || fail "dlprep $cmd --help: no usage line"
  grep -q '^Examples:' sub.txt || fail "dlprep $cmd --help: no examples"
done
dlprep -h | cmp -s - help.txt || fail "-h differs from --help"
