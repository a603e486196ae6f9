#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# SIGINT mid-run: exit 130 and the temporary work folder (encoded sample files) is gone.
mkdir work
make_pnm big.ppm 800 600 3 1
mkdir src
for i in $(seq 1 8); do ln big.ppm src/img$i.ppm; done
code=0
timeout --preserve-status -s INT 1 dlprep -q -j1 profile-mix src --formats png,bmp --sample 8 \
  --storage-bw 50MB/s --pass-seconds 5 --work-dir work >/dev/null || code=$?
[ "$code" = 130 ] || fail "exit $code, expected 130 (did it finish before the signal?)"
[ -z "$(ls -A work)" ] || fail "work folder not cleaned after SIGINT: $(ls -R work | head)"
