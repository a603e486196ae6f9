#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

dlprep --version >v.txt
grep -Eq '^dlprep [0-9]+\.[0-9]+\.[0-9]+ \((.* )?l3( .*)?\)$' v.txt || fail "unexpected version: $(cat v.txt)"
# ...and what this machine runs with it: the L3 and Criteo CPU kernels and the gzip inflater.
grep -Eq ' l3-cpu=(scalar|avx2|gfni) criteo-cpu=(scalar|avx512) gzip=(isal|zlib)\)$' v.txt ||
  fail "no machine facts: $(cat v.txt)"
DLPREP_CRITEO_ISA=scalar dlprep --version | grep -q ' criteo-cpu=scalar ' ||
  fail "DLPREP_CRITEO_ISA=scalar is not what --version reports"
# --json, before or after --version: the same facts as one document.
for order in "--version --json" "--json --version"; do
  # shellcheck disable=SC2086
  dlprep $order >v.json
  json_check 'd["schema"] == "dlprep.version/1" and "l3" in d["features"]' <v.json
done
DLPREP_CRITEO_ISA=scalar dlprep --version --json | json_check 'd["criteo_cpu"] == "scalar"'
json_check "\"$(sed -E 's/^dlprep ([^ ]+) .*/\1/' v.txt)\" == d[\"version\"]" <v.json
