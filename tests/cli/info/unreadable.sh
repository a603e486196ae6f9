#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# A class folder or an image that cannot be read fails the walk, naming it: skipped without a
# word, a class went missing from l3 encode and from l3 verify --against, exit 0. Permissions
# bind only a user other than root: the commands run as nobody.
[ "$(id -u)" = 0 ] || skip "needs root, to run the commands as user nobody"
command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cp "$(readlink -f "$(command -v dlprep)")" ./dlprep-copy
chmod 777 .  # for the outputs of nobody's runs
chmod 755 ./dlprep-copy
as_nobody ./dlprep-copy --version >/dev/null 2>&1 || skip "user nobody cannot run dlprep from $PWD"
mkdir -p tr/cat tr/dog
make_pnm tr/cat/a.ppm 4 4 3 1
make_pnm tr/dog/b.ppm 4 4 3 2
chmod -R a+rX tr
chmod 000 tr/dog
for command in "info tr" "l3 encode tr -o out" "l3 bench tr --codecs l3 --repeats 1"; do
  expect_exit 1 as_nobody ./dlprep-copy -q $command 2>err
  grep -q "tr/dog: cannot read directory: Permission denied" err || fail "$command: $(cat err)"
done
chmod 755 tr/dog
chmod 000 tr/dog/b.ppm
for command in "info tr" "l3 encode tr -o out2"; do
  expect_exit 1 as_nobody ./dlprep-copy -q $command 2>err
  grep -q "tr/dog/b.ppm: cannot open: Permission denied" err || fail "$command: $(cat err)"
done
