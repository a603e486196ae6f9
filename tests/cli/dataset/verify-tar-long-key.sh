#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A key of 9 KB (file names that are not UTF-8 are stored as %XX, three bytes a byte): the pax
# headers of its .cls member take 20 blocks, and verify still finds the member and its class.
mkdir -p src/class0
make_pnm src/class0/img0.ppm 8 8 3 1
/usr/bin/python3 - <<'PY'
import os
d = b"src/class1/" + b"/".join([b"\xff" * 200] * 15)
os.makedirs(d)
with open(d + b"/x.ppm", "wb") as f:
    f.write(b"P6\n4 4\n255\n" + bytes(range(48)))
PY
dlprep -q convert-dataset src ds --to png --shards 1MB
dlprep -q dataset verify ds
key_bytes=$(/usr/bin/python3 -c 'import json
print(max(len(json.loads(l)["key"]) for l in open("ds/samples.jsonl")))')
[ "$key_bytes" -gt 9000 ] || fail "the long key has $key_bytes bytes"
