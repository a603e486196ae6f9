#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A truncated image and a dangling link: --on-error fail stops with the file named (exit 1) and
# records nothing; --on-error skip leaves them out with a warning each (exit 0); --max-errors.
mkdir -p src/cat src/dog
make_pnm src/cat/a.ppm 16 16 3 1
make_pnm src/dog/b.ppm 16 16 3 2
head -c 40 src/cat/a.ppm >src/dog/truncated.ppm
ln -s nowhere.png src/dog/gone.png
echo "notes" >src/cat/README
expect_exit 1 dlprep -q convert-dataset src out --to l3 2>err1.txt
grep -q '^dlprep: error: convert-dataset: src/dog/gone.png: cannot open: No such file or directory$' err1.txt ||
  fail "first failure not named: $(cat err1.txt)"
json_check 'd["complete"] == False' <out/dataset.json
[ ! -e out/samples.jsonl ] || fail "an index was recorded for a failed run"
no_temp_files out
dlprep convert-dataset src out --to l3 --on-error skip 2>err2.txt
grep -q 'warning: convert-dataset: src/dog/truncated.ppm: .* (skipped)$' err2.txt ||
  fail "truncated file not reported: $(cat err2.txt)"
grep -q 'warning: convert-dataset: src/dog/gone.png: cannot open' err2.txt || fail "link not reported"
# A file that is no image by its contents is left out, counted and named (a web page saved as
# .jpg would vanish from a scraped set otherwise).
grep -q 'warning: convert-dataset: 1 file in SRC is not an image by its contents and left out (the first: src/cat/README)$' err2.txt ||
  fail "non-image file not reported: $(cat err2.txt)"
dlprep --json convert-dataset src out --to l3 --on-error skip 2>/dev/null >report.json
json_check 'd["not_images"] == 1' <report.json
json_check 'd["complete"] and d["samples"] == 2 and d["failed"] == 2' <out/dataset.json
dlprep -q dataset verify out
expect_exit 1 dlprep -q convert-dataset src out2 --to l3 --on-error skip --max-errors 1
