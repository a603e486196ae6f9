#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
expect_exit 2 dlprep infoo x.png 2>err.txt
grep -Eq "^dlprep: error: unknown command 'infoo' \(commands: info, l3(, [a-z-]+)*\)$" err.txt || fail "$(cat err.txt)"
[ "$(sed -n 2p err.txt)" = "try 'dlprep --help'" ] || fail "no hint: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 2 ] || fail "more than two lines: $(cat err.txt)"
