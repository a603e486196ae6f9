#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# The batch-decoder benchmark: --device cuda measures on the GPU where one is usable and exits 77
# with the reason elsewhere; --device cpu runs the same measurements (and checks) on the CPU
# backend, so its report is tested on every machine.
make_pnm a.ppm 64 48 3 1
make_pnm b.ppm 33 20 1 2
dlprep -q l3 encode a.ppm -o a.l3
set +e
dlprep --json l3 bench --device cuda a.l3 b.ppm --batch 1,2 --repeats 1 >cuda.json 2>err.txt
rc=$?
set -e
if [ $rc = 0 ]; then
  json_check 'd["backend"] == "cuda" and all(r["verified"] for r in d["rows"])' <cuda.json
else
  [ $rc = 77 ] || fail "--device cuda without a GPU: exit $rc, expected 77: $(cat err.txt)"
  grep -q "^dlprep: error: l3 bench: .*cuda" err.txt || fail "no reason given: $(cat err.txt)"
  # --json: no report, the error document (dlprep.error/1) in its place.
  json_check 'd["schema"] == "dlprep.error/1" and d["exit_status"] == 77' <cuda.json
fi

dlprep --json l3 bench --device cpu a.l3 b.ppm --batch 1,3 --layout nhwc-u8,nchw-f32 \
  --repeats 1 --depth 3 >cpu.json
json_check 'd["schema"] == "dlprep.l3-device-bench/1" and d["backend"] == "cpu"' <cpu.json
json_check 'd["images"] == 2 and d["pipeline_depth"] == 3 and d["ratio"] > 0' <cpu.json
json_check '[(r["batch"], r["layout"]) for r in d["rows"]] == [(1, "nhwc-u8"), (1, "nchw-f32"), (3, "nhwc-u8"), (3, "nchw-f32")]' <cpu.json
json_check 'all(r["verified"] and r["resident_images_per_s"] > 0 for r in d["rows"])' <cpu.json
json_check 'd["rows"][2]["pixel_bytes"] == 2 * 64 * 48 * 3 + 33 * 20' <cpu.json
json_check 'd["rows"][1]["output_bytes"] == 4 * d["rows"][1]["pixel_bytes"]' <cpu.json
json_check 'd["rows"][0]["pinned_images_per_s"] > 0 and "pinned_gb_per_s" not in d["rows"][1]' <cpu.json
json_check 'd["host"]["png_images_per_s"] > 0 and d["latency"]["kernel"]["runs"] == 1' <cpu.json
json_check 'd["nvjpeg"]["rows"] == [] and d["nvjpeg"]["note"] != ""' <cpu.json
json_check 'd["targets"]["resident_200_gb_per_s"] is None' <cpu.json  # no batch >= 64 ran
DLPREP_FORCE_DEVICE=cpu dlprep l3 bench --device cuda a.l3 --batch 2 --repeats 1 >table.txt
grep -q '^l3 bench on cpu: cpu, ' table.txt || fail "$(cat table.txt)"
grep -q "^targets (the CUDA decoder.s): resident >= 200 GB/s at batch >= 64: not measured" table.txt || fail "no targets line: $(cat table.txt)"

expect_exit 2 dlprep l3 bench --device cpu a.l3 --batch 0
expect_exit 2 dlprep l3 bench --device cpu a.l3 --batch 1,x
expect_exit 2 dlprep l3 bench --device cpu a.l3 --layout nhwc-f32
expect_exit 2 dlprep l3 bench --device gpu a.l3
expect_exit 2 dlprep l3 bench --device cpu a.l3 --codecs l3
expect_exit 2 dlprep l3 bench --device cpu a.l3 --depth 0
expect_exit 1 dlprep l3 bench --device cpu missing.l3

# A corrupt L3 file among the inputs is reported by name and left out; the others are measured.
head -c 100 a.l3 >bad.l3
set +e
dlprep --json l3 bench --device cpu a.l3 bad.l3 --batch 1 --repeats 1 >partial.json 2>err.txt
rc=$?
set -e
[ $rc = 1 ] || fail "a corrupt input: exit $rc, expected 1: $(cat err.txt)"
grep -q "bad.l3: l3: truncated" err.txt || fail "the corrupt file is not named: $(cat err.txt)"
json_check 'd["images"] == 1' <partial.json
