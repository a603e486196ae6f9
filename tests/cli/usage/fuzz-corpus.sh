#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# The fuzz corpora (tests/fuzz/corpus: damaged images, L3 files and Criteo text, most of them
# invalid) through the commands, in one run each: every file is either processed or named in an
# error, the exit status is 1 (never a crash), and a file that fails leaves no output behind.
corpus=$CLI_TESTS/../fuzz/corpus

# info: one row or one error per file.
files=$(ls "$corpus/image" | wc -l)
expect_exit 1 dlprep info "$corpus"/image/* >info.txt 2>info.err
rows=$(($(wc -l <info.txt) - 1))
errors=$(grep -c '^dlprep: error: info: .*/fuzz/corpus/image/[0-9a-z_.]*: ' info.err)
[ "$((rows + errors))" = "$files" ] || fail "info: $rows rows + $errors errors for $files files"
[ "$errors" = "$(wc -l <info.err)" ] || fail "info: unexpected stderr: $(grep -v '^dlprep: error: info: ' info.err | head -3)"

# l3 decode of the L3 corpus tree: each file is decoded or named, and a failed one has no output
# (and no temp file).
expect_exit 1 dlprep -q l3 decode "$corpus/l3" -o out/ --to png 2>decode.err
grep -v '^dlprep: error: l3 decode: ' decode.err && fail "l3 decode: unexpected stderr"
while IFS= read -r line; do
  name=${line#dlprep: error: l3 decode: }
  name=$(basename "${name%%: *}")
  [ ! -e "out/$name.png" ] || fail "l3 decode: output left for failed $name"
done <decode.err
[ -z "$(find out -name '.*')" ] || fail "l3 decode: temp files left: $(find out -name '.*')"
decoded=$(find out -type f | wc -l)
[ "$decoded" -gt 0 ] || fail "l3 decode: nothing decoded"
dlprep -q info out >/dev/null || fail "l3 decode: an output does not read back"
expect_exit 1 dlprep -q l3 verify "$corpus/l3" >verify.txt 2>verify.err
[ "$(wc -l <verify.txt)" = "$decoded" ] || fail "l3 verify passed $(wc -l <verify.txt), l3 decode wrote $decoded"
[ "$(wc -l <verify.err)" = "$(wc -l <decode.err)" ] || fail "l3 verify and l3 decode disagree on the failures"

# criteo-preprocess: every piece of text as a day; malformed rows skipped and counted, or the
# first one stops the run, which then leaves no output directory.
dlprep -q --json criteo-preprocess --on-bad-row skip "$corpus"/criteo_tsv/* -o skip >skip.json
/usr/bin/python3 - "$(ls "$corpus/criteo_tsv" | wc -l)" <<'PY'
import json, sys
r = json.load(open("skip.json"))
assert len(r["days"]) == int(sys.argv[1]), len(r["days"])
assert r["bad_rows"] > 0 and r["rows"] > 0, (r["rows"], r["bad_rows"])
assert r["rows"] == sum(d["rows"] for d in r["days"])
PY
expect_exit 1 dlprep criteo-preprocess "$corpus"/criteo_tsv/* -o stop 2>stop.err
grep -q '^dlprep: error: criteo-preprocess: .*/fuzz/corpus/criteo_tsv/[0-9a-z_]*:[0-9]*: ' stop.err || fail "no file:line: $(cat stop.err)"
[ ! -e stop ] || fail "criteo-preprocess left stop/ after failing"
