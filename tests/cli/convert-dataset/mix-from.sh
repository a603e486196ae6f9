#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --mix-from: a quick profile-mix report's mix is the dataset's mix, the same as giving its
# mix_text with --mix.
mkdir work
dlprep -q -j2 profile-mix "$SAMPLE_DATA/images" --formats png,bmp --sample 4 --storage-bw 50MB/s \
  --no-verify -o report.json --work-dir work >/dev/null
dlprep -q -j2 convert-dataset "$SAMPLE_DATA/images" ds --mix-from report.json --seed 2
/usr/bin/python3 - report.json ds/dataset.json <<'PY' || fail "the dataset's mix is not the report's"
import json, sys
report, ds = (json.load(open(p)) for p in sys.argv[1:])
want = {m["spec"]: m["ratio"] for m in report["mix"]}
got = {m["spec"]: m["ratio"] for m in ds["mix"]}
assert want.keys() == got.keys() and all(abs(want[k] - got[k]) < 1e-5 for k in want), (want, got)
assert ds["samples"] == 14 and ds["parameters"]["seed"] == 2
PY
mix=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["mix_text"])' report.json)
# mix_text carries the shares as --mix-from reads them (6 significant digits), not rounded for show.
/usr/bin/python3 - report.json <<'PY' || fail "mix_text is not the report's mix"
import json, sys
r = json.load(open(sys.argv[1]))
text = dict(part.split(":") for part in r["mix_text"].split(","))
for m in r["mix"]:
    if m["ratio"] > 0:
        assert f'{m["ratio"]:.6g}' == text[m["spec"]], (m, r["mix_text"])
PY
dlprep -q -j2 convert-dataset "$SAMPLE_DATA/images" ds2 --mix "$mix" --seed 2
cut -d, -f2,4 ds/samples.jsonl >a.txt
cut -d, -f2,4 ds2/samples.jsonl >b.txt
cmp -s a.txt b.txt || fail "--mix-from and --mix $mix assigned differently"
dlprep -q dataset verify ds

# A report measured with --channels rgb gives its mix an RGB dataset, unless --channels says
# otherwise: jpeg then cannot store the RGBA sample.
dlprep -q -j2 profile-mix "$SAMPLE_DATA/images" --formats jpeg --sample 4 --storage-bw 50MB/s \
  --no-verify --channels rgb -o rgb.json --work-dir work >/dev/null
json_check 'd["channels"] == "rgb"' <rgb.json
dlprep -q convert-dataset "$SAMPLE_DATA/images" rgb --mix-from rgb.json
json_check 'd["parameters"]["transform"] == "channels=rgb"' <rgb/dataset.json
expect_exit 1 dlprep -q convert-dataset "$SAMPLE_DATA/images" kept --mix-from rgb.json --channels keep
json_check 'd["channels"] == "keep"' <report.json
