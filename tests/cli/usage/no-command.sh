#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# No command: a usage error that lists the commands (the list grows, so it is matched loosely).
expect_exit 2 dlprep 2>err.txt
grep -Eq "^dlprep: error: a command is required \(info, l3(, [a-z-]+)*\)$" err.txt || fail "$(cat err.txt)"
[ "$(sed -n 2p err.txt)" = "try 'dlprep --help'" ] || fail "no hint: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 2 ] || fail "more than two lines: $(cat err.txt)"
