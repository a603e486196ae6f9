#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Integer options are decimal in every command: a zero-padded value is its decimal number (CLI11
# alone read "010" as octal 8, a different seed and so a different dataset, and refused "08"),
# and a hexadecimal one is refused naming the option.
mkdir -p src/c
cp "$SAMPLE_DATA/images/kay_256x256.png" "$SAMPLE_DATA/images/kite_199x301.png" src/c/
dlprep -q convert-dataset src padded --to png --seed 010
grep -q '"seed": 10,' padded/dataset.json || fail "--seed 010: $(grep seed padded/dataset.json)"
dlprep -q -j 08 convert-dataset src eight --to png --seed 08 --max-errors 09 --on-error skip
grep -q '"seed": 8,' eight/dataset.json || fail "--seed 08: $(grep seed eight/dataset.json)"
dlprep l3 bench src/c/kay_256x256.png --codecs png --threads 1 --repeats 010 >bench.txt 2>&1
grep -q 'median of 10 runs' bench.txt || fail "--repeats 010: $(cat bench.txt)"

check_hex() {  # OPTION ARGS...: OPTION given 0x10 among ARGS is a usage error naming it
  local option=$1
  shift
  expect_exit 2 dlprep "$@" 2>err.txt
  grep -qF -- "$option: '0x10' is not a decimal number" err.txt || fail "$*: $(cat err.txt)"
}
check_hex --jobs -j 0x10 info src
check_hex --seed convert-dataset src out --to png --seed 0x10
check_hex --max-errors convert-dataset src out --to png --on-error skip --max-errors 0x10
check_hex --days criteo-preprocess raw -o out --days 0x10
check_hex --min-freq criteo-preprocess raw -o out --min-freq 0x10
check_hex --id-base criteo-preprocess raw -o out --id-base 0x10
check_hex --oov-id criteo-preprocess raw -o out --oov-id 0x10
check_hex --chunk-mb criteo-preprocess raw -o out --chunk-mb 0x10
check_hex --repeats l3 bench src --repeats 0x10
check_hex --depth l3 bench src --depth 0x10
check_hex --sample profile-mix src --sample 0x10
check_hex --repeats profile-mix src --repeats 0x10
[ ! -e out ] || fail "a refused command wrote out/"
