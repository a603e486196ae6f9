#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A list file (PATH<TAB>LABEL) as the source, then that dataset as the source of another.
printf '%s\tcat\n' "$SAMPLE_DATA/images/kay_256x256.png" >list.txt
printf '# comment\n\n%s\tdog\n' "$SAMPLE_DATA/images/onestandsout_161x121.bmp" >>list.txt
dlprep -q convert-dataset list.txt ds --to l3
json_check 'd["source"]["kind"] == "list" and sorted(d["classes"]) == ["cat", "dog"]' <ds/dataset.json
dlprep -q convert-dataset ds ds-bmp --to bmp
json_check 'd["source"]["kind"] == "dataset" and d["formats"]["bmp"]["samples"] == 2' <ds-bmp/dataset.json
dlprep -q dataset verify ds-bmp
expect_exit 2 dlprep -q convert-dataset "$SAMPLE_DATA/images/kay_256x256.png" x --to l3
