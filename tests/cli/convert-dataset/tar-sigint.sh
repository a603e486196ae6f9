#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# SIGINT while tar shards are written: exit 130, only whole shards on disk (each a valid
# archive), no temporary file, no index; the rerun keeps those shards, completes and verifies.
make_pnm big.ppm 600 400 3 1
mkdir -p src/a
for i in $(seq 1 120); do ln big.ppm src/a/img$(printf %03d $i).ppm; done
# The signal comes once the second shard is complete (so that the rerun has shards to keep).
dlprep -q -j1 convert-dataset src ds --to png:1 --shards 2MB &
interrupt_when $! '[ -e ds/data/shard-000001.tar ]'
[ "$code" = 130 ] || fail "exit $code, expected 130 (did it finish before the signal?)"
no_temp_files ds
[ ! -e ds/samples.jsonl ] || fail "an index was recorded"
json_check 'd["complete"] == False' <ds/dataset.json
kept=0
for s in ds/data/shard-*.tar; do
  [ -e "$s" ] || continue
  kept=$((kept + 1))
  /usr/bin/python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).getmembers()' "$s" ||
    fail "$s is not a whole archive"
done
[ "$kept" -ge 2 ] || fail "only $kept shards before the signal"
dlprep --json convert-dataset src ds --to png:1 --shards 2MB >rerun.json 2>err.txt
json_check 'd["samples"] == 120 and d["converted"] + d["up_to_date"] == 120' <rerun.json
json_check 'd["up_to_date"] > 0 and d["converted"] < 120' <rerun.json
dlprep -q dataset verify ds
no_temp_files ds
