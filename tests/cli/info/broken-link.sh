#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# A link to nothing inside a tree fails naming it, as convert-dataset's walk does: skipped without
# a word, a sample went missing from l3 encode (exit 0). A tree with no image at all is a usage
# error (exit 2), not a run that did nothing.
mkdir -p tr/cat empty
make_pnm tr/cat/a.ppm 4 4 3 1
ln -s /nonexistent/b.ppm tr/cat/b.ppm
ln -s .. tr/cat/up  # a loop: not followed, no error
for command in "info tr" "l3 encode tr -o out" "l3 bench tr --codecs l3 --repeats 1"; do
  expect_exit 1 dlprep -q $command 2>err
  grep -q "tr/cat/b.ppm: cannot open: No such file or directory" err || fail "$command: $(cat err)"
done
dlprep -q l3 encode tr/cat/a.ppm -o l3/a.l3
ln -s /nonexistent/b.l3 l3/b.l3
for command in "l3 verify l3" "l3 decode l3 -o dec"; do
  expect_exit 1 dlprep -q $command 2>err
  grep -q "l3/b.l3: cannot open: No such file or directory" err || fail "$command: $(cat err)"
done
for command in "info empty" "l3 encode empty -o e1" "l3 decode empty -o e2" "l3 verify empty" \
  "l3 bench empty --repeats 1"; do
  expect_exit 2 dlprep $command 2>err
  grep -q "empty: no .* files found" err || fail "$command: $(cat err)"
done
[ ! -e e1 ] && [ ! -e e2 ] || fail "an output was made for an empty tree"
# A tree of L3 files only, given to encode: decode was surely meant.
mkdir only-l3 && cp l3/a.l3 only-l3/
expect_exit 2 dlprep l3 encode only-l3 -o e6 2>err
grep -q "only-l3: no image files found (only L3 files, which l3 decode takes)" err || fail "$(cat err)"
# Each folder named once, and a few of them.
mkdir e3 e4 e5
expect_exit 2 dlprep info empty empty 2>err
grep -q "error: info: empty: no image files found" err || fail "$(cat err)"
expect_exit 2 dlprep info empty e3 e4 e5 empty 2>err
grep -q "error: info: empty, e3, e4 and 1 more: no image files found" err || fail "$(cat err)"
# One empty directory beside images is a warning only.
dlprep info empty tr/cat/a.ppm >/dev/null 2>err
grep -q "warning: .*empty: no image files found" err || fail "no warning: $(cat err)"
