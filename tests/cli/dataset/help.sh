#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

for cmd in "dataset" "dataset info" "dataset verify" "dataset merge"; do
  dlprep $cmd --help >sub.txt || fail "dlprep $cmd --help failed"
  grep -q "^Usage: dlprep $cmd" sub.txt || fail "dlprep $cmd --help: no usage line"
done
# Through files, not pipes: grep -q exits early, and under pipefail dlprep's SIGPIPE would fail.
dlprep dataset --help >top.txt
grep -q '^Examples:' top.txt || fail "no examples"
dlprep dataset merge --help >merge.txt
grep -q 'SLURM_ARRAY_TASK_ID' merge.txt || fail "no batch-system example"
