#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

dlprep --version >v.txt
grep -Eq '^dlprep [0-9]+\.[0-9]+\.[0-9]+ \((.* )?l3( .*)?\)$' v.txt || fail "unexpected version: $(cat v.txt)"
