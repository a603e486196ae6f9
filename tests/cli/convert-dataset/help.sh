#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --help: stdout, exit 0, the options and examples; the command is listed by dlprep --help.
dlprep convert-dataset --help >help.txt
grep -q '^Usage: dlprep convert-dataset' help.txt || fail "no usage line"
for opt in --to --mix --mix-from --seed --shard --on-error --max-errors --force --resize \
  --max-side --center-crop; do
  grep -q -- "$opt" help.txt || fail "$opt not in --help"
done
grep -q '^Examples:' help.txt || fail "no examples"
dlprep --help | grep -Eq '^  convert-dataset +convert images' || fail "not listed in dlprep --help"
