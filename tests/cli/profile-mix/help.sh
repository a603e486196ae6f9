#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --help: stdout, exit 0, the options and examples; the command is listed by dlprep --help.
dlprep profile-mix --help >help.txt
grep -q '^Usage: dlprep profile-mix' help.txt || fail "no usage line"
for opt in --formats --sample --storage-bw --compute-rate --search --verify --plot --output; do
  grep -q -- "$opt" help.txt || fail "$opt not in --help"
done
grep -q '^Examples:' help.txt || fail "no examples"
dlprep --help >all.txt
grep -Eq '^  profile-mix +find the mix' all.txt || fail "not listed in dlprep --help"
