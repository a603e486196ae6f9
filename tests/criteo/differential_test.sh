#!/bin/sh
# Differential test: dlprep criteo-preprocess against the independent NumPy reference
# (dlrm_reference.py) on real Criteo rows and edge cases, for several option sets.
# Usage: differential_test.sh DLPREP SOURCE_DIR SCRATCH_DIR
# Needs NumPy for /usr/bin/python3 (Debian's python3-numpy) or for $PYTHON; exits 77 (skipped)
# without it.
set -eu
DLPREP=$1
SRC=$2
SCRATCH=$3
PY=${PYTHON:-/usr/bin/python3}
$PY -c 'import numpy' 2>/dev/null || { echo "no NumPy for $PY: skipped"; exit 77; }
S=$SRC/sample_data/criteo
REF=$SRC/tests/criteo/dlrm_reference.py
CMP=$SRC/tests/criteo/compare_outputs.py
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
fail=0

# case NAME FORMAT "DLPREP AND REFERENCE OPTIONS" "DLPREP-ONLY OPTIONS" INPUTS...
case_() {
  name=$1 fmt=$2 opts=$3 extra=$4
  shift 4
  # shellcheck disable=SC2086
  "$DLPREP" -q criteo-preprocess $opts $extra --output-format "$fmt" "$@" -o "$SCRATCH/$name/dlprep" >/dev/null
  # shellcheck disable=SC2086
  $PY "$REF" $opts --output-format "$fmt" "$@" -o "$SCRATCH/$name/ref"
  if $PY "$CMP" "$SCRATCH/$name/dlprep" "$SCRATCH/$name/ref" "$fmt" > "$SCRATCH/$name/compare.txt"; then
    echo "ok   $name: $(cat "$SCRATCH/$name/compare.txt")"
  else
    echo "FAIL $name:"; cat "$SCRATCH/$name/compare.txt"; fail=1
  fi
}

ALL="$S/deepctr_200.tsv $S/nvtabular_day_0.gz $S/edge_cases.tsv"
case_ piper_mod5000 npy "--modulus 5000" "" $ALL
case_ full_hex_ids npy "" "-j 1" $ALL
case_ torchrec_minfreq npy "--id-base 2 --oov-id 1 --log-offset 3 --min-freq 2 --split-last val-test" "" $ALL
case_ dlrm_binary dlrm "--modulus 1000 --no-log --split-last test-val" "" $ALL
case_ per_column_modulus npy "--modulus 7,100,1000,5000,3,11,1000000,2,97,65536,1,10,4096,4294967295,13,17,19,23,29,31,37,41,43,47,53,59 --min-freq 3" "" $ALL
case_ no_log_threshold npy "--no-log --min-freq 2 --id-base 5" "" $ALL
# NVIDIA's split layout: int8 and int16 IDs; then tables either side of int16's limit.
case_ nvidia_split split "--modulus 5000 --split-last test-val" "" $ALL
case_ nvidia_split_wide split "--id-base 32700 --min-freq 2" "" $ALL
exit $fail
