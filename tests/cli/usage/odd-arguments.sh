#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A misspelt kernel cap is a usage error naming the variable, not a silent run of the widest
# kernels (a benchmark comparing kernels would measure one twice).
make_pnm a.ppm 8 8 3 1
DLPREP_L3_ISA=avx-9000 expect_exit 2 dlprep l3 encode a.ppm -o a.l3 2>err1.txt
grep -q "DLPREP_L3_ISA: unknown value 'avx-9000' (expected scalar, avx2, gfni)" err1.txt || fail "$(cat err1.txt)"
DLPREP_CRITEO_ISA=scalr expect_exit 2 dlprep info a.ppm 2>err2.txt
grep -q "DLPREP_CRITEO_ISA: unknown value 'scalr'" err2.txt || fail "$(cat err2.txt)"
DLPREP_L3_ISA=scalar dlprep -q l3 encode a.ppm -o a.l3
DLPREP_L3_ISA=bogus expect_exit 2 dlprep --version >/dev/null 2>&1

# A file whose name starts with '-', alone: named as the unknown option it was taken for.
cp a.ppm ./-a.ppm
expect_exit 2 dlprep info -a.ppm 2>err3.txt
grep -q "unknown option '-a.ppm' (a file whose name starts with '-': write ./-a.ppm or -- -a.ppm)" err3.txt ||
  fail "$(cat err3.txt)"
dlprep -q info -- -a.ppm >/dev/null

# An unsigned number past 2^64 - 1 is refused, not clamped (two seeds, one dataset).
expect_exit 2 dlprep convert-dataset "$SAMPLE_DATA/images" ds --to png --seed 18446744073709551616 2>err4.txt
grep -q "out of range" err4.txt || fail "$(cat err4.txt)"
[ ! -e ds ] || fail "ds written despite a usage error"

# --json: a command that stops on an error still prints one document (`… | jq` never reads
# nothing); a report that carries its own errors is not replaced.
expect_exit 1 dlprep --json dataset info nope >err.json 2>/dev/null
json_check 'd["schema"] == "dlprep.error/1" and d["command"] == "dataset info" and d["exit_status"] == 1 and "nope" in d["error"]' <err.json
expect_exit 2 dlprep --json convert-dataset "$SAMPLE_DATA/images" ds2 --to gif >err2.json 2>/dev/null
json_check 'd["schema"] == "dlprep.error/1" and d["exit_status"] == 2' <err2.json
# Also for a command line that CLI11 refuses, wherever --json is.
expect_exit 2 dlprep --json info --bogus >err3.json 2>/dev/null
json_check 'd["schema"] == "dlprep.error/1" and d["exit_status"] == 2 and "--bogus" in d["error"]' <err3.json
expect_exit 2 dlprep --progress sometimes info a.ppm --json >err4.json 2>/dev/null
json_check 'd["schema"] == "dlprep.error/1" and d["exit_status"] == 2' <err4.json
expect_exit 1 dlprep --json info nope.png >info.json 2>/dev/null
json_check 'd["schema"] == "dlprep.info/1"' <info.json

# An empty value (a Makefile variable left unset, quoted) is a usage error naming the option,
# never the option left out: --against "" compared nothing, --vocab-from "" built a fresh
# vocabulary, -o "" failed with an internal error.
make_pnm b.ppm 4 4 3 2
dlprep -q l3 encode b.ppm -o b.l3
while read -r name args; do
  eval "set -- $args"
  expect_exit 2 dlprep "$@" 2>err5.txt
  grep -qx "dlprep: error: .*: $name: must not be empty" err5.txt || fail "$args: $(cat err5.txt)"
done <<'CASES'
--against l3 verify b.l3 --against ''
--vocab-from criteo-preprocess --vocab-from '' in.tsv -o out
--emit-binary criteo-preprocess in.tsv -o out --emit-binary ''
--max-memory criteo-preprocess in.tsv -o out --max-memory ''
--output dataset merge a b -o ''
--output profile-mix b.ppm -o ''
--plot profile-mix b.ppm --plot ''
--work-dir profile-mix b.ppm --work-dir ''
SRC convert-dataset '' ds --to png
FILE info ''
CASES
[ ! -e out ] && [ ! -e ds ] || fail "an output was written despite a usage error"
# A flag given an empty value (--shuffle="$(SHUFFLE)" with the variable unset) too.
expect_exit 2 dlprep convert-dataset "$SAMPLE_DATA/images" ds --to png --shuffle= 2>err6.txt
grep -qx 'dlprep: error: convert-dataset: --shuffle: must not be empty' err6.txt || fail "$(cat err6.txt)"
[ ! -e ds ] || fail "ds written despite a usage error"
