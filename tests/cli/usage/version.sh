#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

dlprep --version >v.txt
grep -Eq '^dlprep [0-9]+\.[0-9]+\.[0-9]+ \((.* )?l3( .*)?\)$' v.txt || fail "unexpected version: $(cat v.txt)"
# ...and what this machine runs with it: the L3 and Criteo CPU kernels and the gzip inflater.
grep -Eq ' l3-cpu=(scalar|avx2|gfni) criteo-cpu=(scalar|avx512) gzip=(isal|zlib)\)$' v.txt ||
  fail "no machine facts: $(cat v.txt)"
DLPREP_CRITEO_ISA=scalar dlprep --version | grep -q ' criteo-cpu=scalar ' ||
  fail "DLPREP_CRITEO_ISA=scalar is not what --version reports"
