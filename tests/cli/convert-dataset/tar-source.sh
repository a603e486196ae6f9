#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A tar-sharded dataset as SRC: of another convert (to a file tree and to tar shards), and of
# profile-mix; a hostile index (offset past the end) is a clear error naming its line.
i=0
for f in "$SAMPLE_DATA"/images/*.png; do
  c=class$((i % 2)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
dlprep -q convert-dataset src tar --to png --shards 1MB
dlprep -q convert-dataset tar files --to bmp
json_check 'd["source"]["kind"] == "dataset" and d["samples"] == 8 and d["layout"] == "files"' <files/dataset.json
dlprep -q dataset verify files
dlprep -q convert-dataset tar retar --to l3 --shards 300kB
json_check 'd["samples"] == 8 and d["layout"] == "tar" and d["tar"]["labels"] == ["class0", "class1"]' <retar/dataset.json
dlprep -q dataset verify retar
# (the storage bandwidth measured on the members' byte ranges, not on whole shards)
dlprep -q -j2 profile-mix tar --formats png,bmp --sample 4 --pass-seconds 0.3 --no-verify \
  -o report.json >/dev/null
json_check 'd["sample_images"] == 4 and d["resources"]["storage_source"] == "measured" and d["resources"]["storage_bytes_per_s"] > 0' <report.json
# A hostile index: an offset past the end of its shard.
/usr/bin/python3 - <<'PY'
import json
lines = open("tar/samples.jsonl").read().splitlines()
r = json.loads(lines[2])
r["offset"] = 1 << 40
lines[2] = json.dumps(r)
open("tar/samples.jsonl", "w").write("\n".join(lines) + "\n")
PY
expect_exit 1 dlprep -q convert-dataset tar bad --to bmp 2>err.txt
grep -q "^dlprep: error: convert-dataset: tar/samples.jsonl:3: sample '[^']*': offset 1099511627776 + [0-9]* bytes is past the end of data/shard-[0-9]*\.tar ([0-9]* bytes)\$" err.txt ||
  fail "$(cat err.txt)"
