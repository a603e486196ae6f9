#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
expect_exit 2 dlprep infoo x.png 2>err.txt
grep -Eq "^dlprep: error: unknown command 'infoo' \(commands: info, l3(, [a-z-]+)*\)$" err.txt || fail "$(cat err.txt)"
[ "$(sed -n 2p err.txt)" = "try 'dlprep --help'" ] || fail "no hint: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 2 ] || fail "more than two lines: $(cat err.txt)"

# --help after a command that does not exist is no help for it: exit 2, not l3's help with 0.
expect_exit 2 dlprep l3 convert --help >out.txt 2>err.txt
grep -q "^dlprep: error: l3: unknown command 'convert' (commands: encode, decode, verify, bench)$" err.txt \
  || fail "$(cat err.txt)"
[ ! -s out.txt ] || fail "help printed: $(head -2 out.txt)"
expect_exit 2 dlprep bogus --help 2>/dev/null >/dev/null
dlprep l3 --help >/dev/null
dlprep l3 encode --help >/dev/null
# --version answers whatever follows it.
dlprep --version x | grep -q '^dlprep ' || fail "--version x did not print the version"
