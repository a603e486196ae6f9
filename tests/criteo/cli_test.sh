#!/bin/sh
# CLI cases of `dlprep criteo-preprocess`: exit codes (STYLE.md section 3), messages, --json,
# rerun, SIGINT. Usage: cli_test.sh DLPREP SOURCE_DIR SCRATCH_DIR
set -u
DLPREP=$1
SRC=$2
T=$3
S=$SRC/sample_data/criteo
rm -rf "$T"
mkdir -p "$T"
fail=0

# expect NAME CODE COMMAND...: runs the command, checks the exit code; stdout/stderr in $T/NAME.*
expect() {
  name=$1 code=$2
  shift 2
  "$@" > "$T/$name.out" 2> "$T/$name.err"
  got=$?
  if [ "$got" -ne "$code" ]; then
    echo "FAIL $name: exit $got, expected $code"; sed 's/^/  stderr: /' "$T/$name.err"; fail=1
  else
    echo "ok   $name (exit $code)"
  fi
}
# contains NAME FILE TEXT
contains() {
  if ! grep -q -- "$3" "$2"; then echo "FAIL $1: '$3' not in $2"; sed 's/^/  /' "$2"; fail=1; fi
}

expect help 0 "$DLPREP" criteo-preprocess --help
contains help "$T/help.out" "Usage: dlprep criteo-preprocess"
contains help "$T/help.out" "--modulus"
expect no_args 2 "$DLPREP" criteo-preprocess
contains no_args "$T/no_args.err" "criteo-preprocess --help"
expect bad_modulus 2 "$DLPREP" criteo-preprocess --modulus x "$S/deepctr_200.tsv" -o "$T/o1"
contains bad_modulus "$T/bad_modulus.err" "modulus"
expect bad_format 2 "$DLPREP" criteo-preprocess --output-format csv "$S/deepctr_200.tsv" -o "$T/o1"
expect dlrm_needs_no_log 2 "$DLPREP" criteo-preprocess --output-format dlrm "$S/deepctr_200.tsv" -o "$T/o1"
expect split_needs_log 2 "$DLPREP" criteo-preprocess --output-format split --no-log "$S/deepctr_200.tsv" -o "$T/o1"
contains split_needs_log "$T/split_needs_log.err" "float16 after the log"
# A missing input is a failure (1) naming it, as in every command, not a usage error (2).
expect missing_input 1 "$DLPREP" criteo-preprocess "$T/nope.tsv" -o "$T/o1"
contains missing_input "$T/missing_input.err" "nope.tsv: cannot open: No such file or directory"
expect missing_vocab_from 1 "$DLPREP" criteo-preprocess --vocab-from "$T/nope" "$S/deepctr_200.tsv" -o "$T/o1"
contains missing_vocab_from "$T/missing_vocab_from.err" "--vocab-from $T/nope: cannot open: No such file or directory"
# A folder without a vocabulary (a run made with --no-vocab, or the wrong folder): a usage error.
mkdir -p "$T/novocab"
expect no_vocabulary 2 "$DLPREP" criteo-preprocess --vocab-from "$T/novocab" "$S/deepctr_200.tsv" -o "$T/o1"
contains no_vocabulary "$T/no_vocabulary.err" "novocab: holds no vocabulary (no vocab.json, nor vocab/vocab.json)"
mkdir -p "$T/badvocab/vocab" && echo '{' > "$T/badvocab/vocab/vocab.json"
expect bad_vocab_json 1 "$DLPREP" criteo-preprocess --vocab-from "$T/badvocab" "$S/deepctr_200.tsv" -o "$T/o1"
contains bad_vocab_json "$T/bad_vocab_json.err" "vocab.json: not valid JSON (parse error at line 2"
# The DeepCTR sample as published (CSV with a header) is not Criteo TSV: exit 1, file:line (after
# an empty day).
: > "$T/empty.tsv"
expect csv_input 1 "$DLPREP" criteo-preprocess "$T/empty.tsv" "$SRC/tests/criteo/cli_test.sh" -o "$T/o2"
contains csv_input "$T/csv_input.err" "cli_test.sh:1: "
contains csv_input "$T/csv_input.err" "dlprep: error: criteo-preprocess"
if [ -e "$T/o2" ]; then echo "FAIL csv_input: the failed run left $T/o2 behind"; fail=1; fi
# --device cuda: exit 77 with the reason where CUDA is not built in or no GPU is usable; where one
# is, the run succeeds on it.
"$DLPREP" --json criteo-preprocess --device cuda "$S/deepctr_200.tsv" -o "$T/o3" > "$T/device_cuda.out" 2> "$T/device_cuda.err"
got=$?
case $got in
  77) contains device_cuda "$T/device_cuda.err" "dlprep: error: criteo-preprocess: --device cuda: "
      echo "ok   device_cuda (exit 77: $(head -1 "$T/device_cuda.err"))" ;;
  0) contains device_cuda "$T/device_cuda.out" '"device": "cuda"'
     echo "ok   device_cuda (exit 0: ran on the GPU)" ;;
  *) echo "FAIL device_cuda: exit $got"; sed 's/^/  stderr: /' "$T/device_cuda.err"; fail=1 ;;
esac
expect force_fpga 77 env DLPREP_FORCE_DEVICE=fpga "$DLPREP" criteo-preprocess "$S/deepctr_200.tsv" -o "$T/o3"
contains force_fpga "$T/force_fpga.err" "DLPREP_FORCE_DEVICE=fpga: "
expect force_cpu 0 env DLPREP_FORCE_DEVICE=cpu "$DLPREP" --json criteo-preprocess --device cuda "$S/deepctr_200.tsv" -o "$T/o7"
contains force_cpu "$T/force_cpu.out" '"device": "cpu"'
expect device_auto 0 "$DLPREP" --json criteo-preprocess --device auto "$S/deepctr_200.tsv" -o "$T/o8"
contains device_auto "$T/device_auto.out" '"device": "c'
expect bad_force 2 env DLPREP_FORCE_DEVICE=gpu "$DLPREP" criteo-preprocess "$S/deepctr_200.tsv" -o "$T/o9"
expect max_memory 1 "$DLPREP" criteo-preprocess --max-memory 1M "$S/deepctr_200.tsv" -o "$T/o3"
expect max_memory_zero 2 "$DLPREP" criteo-preprocess --max-memory 0 "$S/deepctr_200.tsv" -o "$T/o3z"
contains max_memory_zero "$T/max_memory_zero.err" "is no memory at all"
contains max_memory "$T/max_memory.err" "max-memory"
# Under an address-space limit (ulimit -v), running out names it: a 512 MiB chunk cannot fit
# 300 MB. A sanitizer build cannot start under such a limit (its shadow memory): skipped there.
if (ulimit -v 4000000 && "$DLPREP" --version) >/dev/null 2>&1; then
  expect address_limit 1 bash -c 'ulimit -v 300000 && exec "$0" criteo-preprocess --chunk-mb 512 "$1" -o "$2"' "$DLPREP" "$S/deepctr_200.tsv" "$T/o3v"
  contains address_limit "$T/address_limit.err" "out of memory under an address-space limit of 307 MB (ulimit -v)"
  [ ! -e "$T/o3v" ] || { echo "FAIL address_limit: $T/o3v written"; fail=1; }
else
  echo "skip address_limit: this build cannot run under ulimit -v (a sanitizer's shadow memory)"
fi
# Memory sizes by dlprep's one rule (lib/core/byte_size.hpp): any case, fractions of a unit;
# K, M, G, T and KiB .. powers of 1024, as Slurm and Docker read them; kB, MB, GB powers of 1000.
expect max_memory_units 0 "$DLPREP" criteo-preprocess --max-memory 4g "$S/deepctr_200.tsv" -o "$T/o3b"
expect max_memory_tiny 1 "$DLPREP" criteo-preprocess --max-memory 1.5KiB "$S/deepctr_200.tsv" -o "$T/o3c"
contains max_memory_tiny "$T/max_memory_tiny.err" "--max-memory is 1536 bytes"
expect max_memory_decimal 1 "$DLPREP" criteo-preprocess --max-memory 1.5kB "$S/deepctr_200.tsv" -o "$T/o3m1"
contains max_memory_decimal "$T/max_memory_decimal.err" "--max-memory is 1500 bytes"
expect max_memory_fraction 2 "$DLPREP" criteo-preprocess --max-memory 1.5B "$S/deepctr_200.tsv" -o "$T/o3m2"
contains max_memory_fraction "$T/max_memory_fraction.err" "is not a size"
# A --vocab-from vocabulary too big for --max-memory is refused before it is read (vocab.json's
# cardinalities and modulus give its size: 26 flat tables of 4 Mi entries are 416 MiB).
expect big_vocab 0 "$DLPREP" criteo-preprocess --modulus 4194304 --output-format none "$S/deepctr_200.tsv" -o "$T/bigvocab"
expect vocab_from_max_memory 1 "$DLPREP" criteo-preprocess --vocab-from "$T/bigvocab" --max-memory 200M "$S/deepctr_200.tsv" -o "$T/o3f"
contains vocab_from_max_memory "$T/vocab_from_max_memory.err" "needs about 464 MiB"
[ ! -e "$T/o3f" ] || { echo "FAIL vocab_from_max_memory: $T/o3f written"; fail=1; }
# A pipe is refused before it is opened (sniffing its format would lose its first bytes).
mkfifo "$T/fifo"
expect fifo_input 2 "$DLPREP" criteo-preprocess "$T/fifo" -o "$T/o3d"
contains fifo_input "$T/fifo_input.err" "fifo: not a regular file"
[ ! -e "$T/o3d" ] || { echo "FAIL fifo_input: $T/o3d written"; fail=1; }
# So is standard input ("-"), for the same reasons; and a file where a folder must be is one
# clear usage error, before any work.
expect stdin_input 2 "$DLPREP" criteo-preprocess - -o "$T/o3g" < "$S/deepctr_200.tsv"
contains stdin_input "$T/stdin_input.err" "-: standard input cannot be an input"
: > "$T/a_file"
expect out_is_file 2 "$DLPREP" criteo-preprocess "$S/deepctr_200.tsv" -o "$T/a_file"
contains out_is_file "$T/out_is_file.err" "-o $T/a_file: exists and is not a directory"
expect emit_under_file 2 "$DLPREP" criteo-preprocess --emit-binary "$T/a_file/rows.bin" "$S/deepctr_200.tsv" -o "$T/o3h"
contains emit_under_file "$T/emit_under_file.err" "--emit-binary $T/a_file/rows.bin: $T/a_file exists and is not a directory"
[ ! -e "$T/o3g" ] && [ ! -e "$T/o3h" ] || { echo "FAIL: an output of a refused run was written"; fail=1; }
# Another compressor's file is named as such (not a binary byte at line 1).
/usr/bin/python3 -c "import lzma, sys; sys.stdout.buffer.write(lzma.compress(open(sys.argv[1], 'rb').read()))" "$S/deepctr_200.tsv" > "$T/day.xz"
expect xz_input 1 "$DLPREP" criteo-preprocess "$T/day.xz" -o "$T/o3e"
contains xz_input "$T/xz_input.err" "day.xz: xz-compressed; dlprep reads plain or gzip text"
expect min_freq_negative 2 "$DLPREP" criteo-preprocess --min-freq -5 "$S/deepctr_200.tsv" -o "$T/o3c"
contains min_freq_negative "$T/min_freq_negative.err" "is negative"
expect log_offset_inf 2 "$DLPREP" criteo-preprocess --log-offset inf "$S/deepctr_200.tsv" -o "$T/o3c"
expect max_memory_bad 2 "$DLPREP" criteo-preprocess --max-memory 1x "$S/deepctr_200.tsv" -o "$T/o3c"
contains max_memory_bad "$T/max_memory_bad.err" "is not a size"
expect skip_bad 0 "$DLPREP" criteo-preprocess --on-bad-row skip "$S/deepctr_200.tsv" "$SRC/tests/criteo/cli_test.sh" -o "$T/o4"
contains skip_bad "$T/skip_bad.err" "malformed rows skipped"
expect json 0 "$DLPREP" --json criteo-preprocess --preset piper "$S/nvtabular_day_0.gz" -o "$T/o5"
contains json "$T/json.out" '"schema": "dlprep.criteo-preprocess/1"'
contains json "$T/json.out" '"rows": 1000'
# A rerun finds o5 up to date; --force (convert-dataset's name for --no-resume) redoes it.
expect rerun_done 0 "$DLPREP" criteo-preprocess --preset piper "$S/nvtabular_day_0.gz" -o "$T/o5"
contains rerun_done "$T/rerun_done.out" "every day up to date"
expect rerun_force 0 "$DLPREP" criteo-preprocess --force --preset piper "$S/nvtabular_day_0.gz" -o "$T/o5"
if grep -q "up to date" "$T/rerun_force.out"; then echo "FAIL rerun_force: resumed"; fail=1; fi
# Progress counts the passes over the input in MB (the sample is 0.1 MB): one where every ID is
# final at first sight, two with a frequency threshold.
expect progress 0 "$DLPREP" --progress always criteo-preprocess --no-resume --preset piper "$S/nvtabular_day_0.gz" -o "$T/o10"
contains progress "$T/progress.err" "criteo-preprocess (single pass): "
contains progress "$T/progress.err" " MB (100%)"
expect progress2 0 "$DLPREP" --progress always criteo-preprocess --no-resume --preset piper --min-freq 2 "$S/nvtabular_day_0.gz" -o "$T/o11"
contains progress2 "$T/progress2.err" "criteo-preprocess (pass 2): "
contains progress2 "$T/progress2.err" "criteo-preprocess (pass 2): 0.1/0.1 MB (100%)"
# A split last day in a single pass: its rows counted first, that read in the total too.
expect progress_split 0 "$DLPREP" --progress always criteo-preprocess --no-resume --preset torchrec --split-last val-test "$S/deepctr_200.tsv" "$S/nvtabular_day_0.gz" -o "$T/o12"
contains progress_split "$T/progress_split.err" "criteo-preprocess (single pass): 0.2/0.2 MB (100%)"
# --vocab-from reads its inputs once too (its IDs are known); a rerun finds the day done, with
# its counts from state.json.
expect vocab_from 0 "$DLPREP" --progress always criteo-preprocess --vocab-from "$T/o10" "$S/nvtabular_day_0.gz" -o "$T/o13"
contains vocab_from "$T/vocab_from.err" "criteo-preprocess (single pass): 0.1/0.1 MB (100%)"
contains vocab_from "$T/vocab_from.out" "1000 rows in .*a single pass"
contains vocab_from "$T/vocab_from.out" '^num_embeddings_per_feature: [0-9]\{1,\}\(,[0-9]\{1,\}\)\{25\}$'
expect vocab_from_rerun 0 "$DLPREP" criteo-preprocess --vocab-from "$T/o10" "$S/nvtabular_day_0.gz" -o "$T/o13"
contains vocab_from_rerun "$T/vocab_from_rerun.out" "1000  *0  *71676  *up to date"
# It takes the conventions of the vocabulary's run (here --preset torchrec's IDs from 2, OOV 1 and
# log(x+3)) without being told again; explicit options still win; its run's directory is refused.
expect conv_train 0 "$DLPREP" criteo-preprocess --preset torchrec "$S/nvtabular_day_0.gz" -o "$T/o14"
expect conv_test 0 "$DLPREP" criteo-preprocess --vocab-from "$T/o14" "$S/deepctr_200.tsv" -o "$T/o15"
expect conv_preset 0 "$DLPREP" criteo-preprocess --preset torchrec --vocab-from "$T/o14/vocab" "$S/deepctr_200.tsv" -o "$T/o16"
expect conv_id_base 0 "$DLPREP" criteo-preprocess --id-base 5 --vocab-from "$T/o14" "$S/deepctr_200.tsv" -o "$T/o17"
for f in day_0_dense.npy day_0_sparse.npy day_0_labels.npy; do
  cmp -s "$T/o15/$f" "$T/o16/$f" || { echo "FAIL conv_test: $f differs from --preset torchrec's"; fail=1; }
done
if cmp -s "$T/o15/day_0_sparse.npy" "$T/o17/day_0_sparse.npy"; then echo "FAIL conv_id_base: --id-base 5 changed nothing"; fail=1; fi
expect conv_own_dir 2 "$DLPREP" criteo-preprocess --vocab-from "$T/o14" "$S/deepctr_200.tsv" -o "$T/o14"
contains conv_own_dir "$T/conv_own_dir.err" "holds the --vocab-from vocabulary"
# The partial checkpoint of an interrupted (or running) run is not its vocabulary: refused.
cp -r "$T/o14" "$T/o14p"
/usr/bin/python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
v["days"].append(v["days"][0])  # one day of two done
json.dump(v, open(sys.argv[1], "w"))' "$T/o14p/vocab/vocab.json"
expect conv_partial 2 "$DLPREP" criteo-preprocess --vocab-from "$T/o14p" "$S/deepctr_200.tsv" -o "$T/o14q"
contains conv_partial "$T/conv_partial.err" "a partial vocabulary (1 of 2 days)"
# --emit-binary naming an input would replace it; contradictory options; an OOV ID whose
# num_embeddings (2^31) int32 cannot hold; --days 0.
cp "$S/deepctr_200.tsv" "$T/in.tsv"
expect emit_is_input 2 "$DLPREP" criteo-preprocess --emit-binary "$T/in.tsv" "$T/in.tsv" -o "$T/o14e"
cmp -s "$S/deepctr_200.tsv" "$T/in.tsv" || { echo "FAIL emit_is_input: the input was replaced"; fail=1; }
expect log_and_no_log 2 "$DLPREP" criteo-preprocess --no-log --log-offset 3 "$T/in.tsv" -o "$T/o14n"
expect oov_int32 2 "$DLPREP" criteo-preprocess --oov-id 2147483647 "$T/in.tsv" -o "$T/o14o"
# --emit-binary inside OUTDIR (a day file's name: the dlrm layout's day_0.bin) or the --vocab-from
# directory would be replaced by a file of the run, a directory cannot be written: refused at once.
expect emit_in_outdir 2 "$DLPREP" criteo-preprocess --preset dlrm --emit-binary "$T/o14x/day_0.bin" "$T/in.tsv" -o "$T/o14x"
contains emit_in_outdir "$T/emit_in_outdir.err" "is inside the output directory"
expect emit_is_dir 2 "$DLPREP" criteo-preprocess --emit-binary "$T" "$T/in.tsv" -o "$T/o14x"
# --emit-binary /dev/stdout into a file (a redirection without O_APPEND): the rows alone, the
# summary on stderr (it overwrote the header).
expect emit_stdout 0 "$DLPREP" criteo-preprocess --emit-binary /dev/stdout "$S/deepctr_200.tsv" -o "$T/o14s"
[ "$(head -c 8 "$T/emit_stdout.out")" = DLPCRTO1 ] || { echo "FAIL emit_stdout: no header"; fail=1; }
[ "$(wc -c < "$T/emit_stdout.out")" -eq $((64 + 160 * 200)) ] || { echo "FAIL emit_stdout: size"; fail=1; }
contains emit_stdout "$T/emit_stdout.err" "num_embeddings_per_feature"
# FILE as standard error too (2>&1) would take warnings and the summary into the rows: refused
# before anything is written. A closed standard error does not make the first file opened one.
"$DLPREP" criteo-preprocess --emit-binary /dev/stdout "$S/deepctr_200.tsv" -o "$T/o14t" > "$T/emit_2to1.out" 2>&1
if [ $? -ne 2 ] || ! grep -q "also the standard error" "$T/emit_2to1.out" || [ -e "$T/o14t" ]; then
  echo "FAIL emit_2to1: not refused"; fail=1
else echo "ok   emit_2to1 (exit 2)"; fi
"$DLPREP" criteo-preprocess --emit-binary /dev/stdout "$S/deepctr_200.tsv" -o "$T/o14u" > "$T/emit_closed.out" 2>&-
if [ $? -ne 0 ] || [ "$(head -c 8 "$T/emit_closed.out")" != DLPCRTO1 ] ||
   [ "$(wc -c < "$T/emit_closed.out")" -ne $((64 + 160 * 200)) ]; then
  echo "FAIL emit_closed_stderr: FILE damaged"; fail=1
else echo "ok   emit_closed_stderr (exit 0)"; fi
expect emit_in_vocab 2 "$DLPREP" criteo-preprocess --vocab-from "$T/o14" --emit-binary "$T/o14/vocab/C1_values.npy" "$T/in.tsv" -o "$T/o14x"
if [ -e "$T/o14x" ]; then echo "FAIL emit_in_outdir: $T/o14x written"; fail=1; fi
# An OOV ID among the kept values' IDs would merge rare values into a real one: refused before any
# output. The DLRM layout's integer dense values take no --log-offset; --split-last has no files to
# split under --output-format none; a binary row file whose header has another field count.
expect oov_collides 2 "$DLPREP" criteo-preprocess --id-base 2 --oov-id 2 --min-freq 2 "$T/in.tsv" -o "$T/o14c"
contains oov_collides "$T/oov_collides.err" "--oov-id 2 is the ID of a kept value of C1"
if [ -e "$T/o14c/day_0_sparse.npy" ]; then echo "FAIL oov_collides: day files written"; fail=1; fi
expect dlrm_log_offset 2 "$DLPREP" criteo-preprocess --preset dlrm --log-offset 3 "$T/in.tsv" -o "$T/o14c"
contains dlrm_log_offset "$T/dlrm_log_offset.err" "use --output-format npy"
expect split_none 2 "$DLPREP" criteo-preprocess --split-last test-val --output-format none "$T/in.tsv" -o "$T/o14c"
"$DLPREP" -q criteo-preprocess --output-format none --no-vocab --emit-binary "$T/rows.bin" "$T/in.tsv" -o "$T/o14b" >/dev/null
printf '\047' | dd of="$T/rows.bin" bs=1 seek=16 conv=notrunc 2>/dev/null
expect bin_fields 1 "$DLPREP" criteo-preprocess "$T/rows.bin" -o "$T/o14c"
contains bin_fields "$T/bin_fields.err" "not a dlprep binary row file"
# An empty input is usually a failed copy: a warning names it.
: > "$T/empty_day.tsv"
expect empty_day 0 "$DLPREP" criteo-preprocess "$T/in.tsv" "$T/empty_day.tsv" -o "$T/o14y"
contains empty_day "$T/empty_day.err" "empty_day.tsv: no rows (an empty file?)"
# An --id-base that the columns' kept values push past int32 is a usage error naming them.
expect id_base_far 2 "$DLPREP" criteo-preprocess "$S/deepctr_200.tsv" -o "$T/o14i" --id-base 2147483646
contains id_base_far "$T/id_base_far.err" "--id-base 2147483646: the 27 kept values of C1 would take IDs past 2^31 - 1 (give at most 2147483620)"
# So is an input without a good row (Kaggle's label-less test.txt, skipped row by row), and the
# summary does not call the day it wrote up to date.
cut -f2- "$S/deepctr_200.tsv" >"$T/nolabel.tsv"
expect no_label 0 "$DLPREP" criteo-preprocess --on-bad-row skip "$T/nolabel.tsv" -o "$T/o14n"
contains no_label "$T/no_label.err" "nolabel.tsv: every row (200) is malformed: no row was written"
if grep -q "up to date" "$T/no_label.out"; then echo "FAIL no_label: summary says up to date"; fail=1; fi
# OUTDIR/vocab describes OUTDIR's arrays, for --vocab-from OUTDIR: a rerun that reuses it with
# another --min-freq records that; a --no-vocab rerun that built another vocabulary removes it.
expect conv_rerun1 0 "$DLPREP" criteo-preprocess --min-freq 2 "$T/in.tsv" -o "$T/o19"
expect conv_rerun2 0 "$DLPREP" criteo-preprocess --min-freq 3 --log-offset 2 "$T/in.tsv" -o "$T/o19"
contains conv_rerun2 "$T/o19/vocab/vocab.json" '"min_freq": 3'
expect conv_rerun3 0 "$DLPREP" criteo-preprocess --vocab-from "$T/o19" "$T/in.tsv" -o "$T/o20"
for f in day_0_sparse.npy day_0_dense.npy; do
  cmp -s "$T/o19/$f" "$T/o20/$f" || { echo "FAIL conv_rerun: --vocab-from of the rerun's vocabulary: $f differs"; fail=1; }
done
expect no_vocab_rerun 0 "$DLPREP" criteo-preprocess --modulus 50 --no-vocab "$T/in.tsv" -o "$T/o19"
if [ -e "$T/o19/vocab" ]; then echo "FAIL no_vocab_rerun: the earlier run's vocab/ stayed"; fail=1; fi
mkdir -p "$T/days"
cp "$S/deepctr_200.tsv" "$T/days/day_0"
expect days_zero 2 "$DLPREP" criteo-preprocess --days 0 "$T/days" -o "$T/o14d"
contains days_zero "$T/days_zero.err" "--days: '0' is not from 1"
# The temp files of a killed run (SIGKILL allows no cleanup) go with the next run into OUTDIR,
# and those of its --emit-binary FILE; another file that looks alike stays.
mkdir -p "$T/o14k/vocab"
: > "$T/o14k/.day_0_dense.npy.tmp.AbC123"
: > "$T/o14k/vocab/.C1_values.npy.tmp.XyZ789"
: > "$T/o14k/.notes.tmp"
: > "$T/.k.bin.tmp.Qq1234"
touch -d '2 minutes ago' "$T/.k.bin.tmp.Qq1234"  # FILE's: a live run's (into another OUTDIR) is younger
expect killed_temps 0 "$DLPREP" criteo-preprocess --emit-binary "$T/k.bin" "$T/in.tsv" -o "$T/o14k"
for f in "$T/o14k/.day_0_dense.npy.tmp.AbC123" "$T/o14k/vocab/.C1_values.npy.tmp.XyZ789" "$T/.k.bin.tmp.Qq1234"; do
  [ ! -e "$f" ] || { echo "FAIL killed_temps: $f left"; fail=1; }
done
[ -e "$T/o14k/.notes.tmp" ] || { echo "FAIL killed_temps: another file removed"; fail=1; }
# Day files as a shell glob sorts them (day_10 before day_2): a warning, and the run goes on.
mkdir -p "$T/glob"
cp "$S/deepctr_200.tsv" "$T/glob/day_10"
cp "$S/edge_cases.tsv" "$T/glob/day_2"
expect day_order 0 "$DLPREP" criteo-preprocess "$T/glob"/day_* -o "$T/o18"
contains day_order "$T/day_order.err" "warning: .*day_10 comes before day_2"
mkdir -p "$T/both"
cp "$S/deepctr_200.tsv" "$T/both/day_0" && gzip -c "$S/deepctr_200.tsv" > "$T/both/day_0.gz"
expect days_both 0 "$DLPREP" criteo-preprocess --days 1 "$T/both" -o "$T/o_both"
contains days_both "$T/days_both.err" "day_0 and day_0.gz both exist: the uncompressed file is read"
expect rerun 0 "$DLPREP" criteo-preprocess --preset piper "$S/nvtabular_day_0.gz" -o "$T/o5"
contains rerun "$T/rerun.out" "up to date"
# No rate for rows that were not read again.
contains rerun "$T/rerun.out" "^1000 rows, every day up to date (checked in "
expect rerun_json 0 "$DLPREP" --json criteo-preprocess --preset piper "$S/nvtabular_day_0.gz" -o "$T/o5"
contains rerun_json "$T/rerun_json.out" '"rows_per_s": null'
contains rerun_json "$T/rerun_json.out" '"compute_rows_per_s": null'
contains rerun_json "$T/rerun_json.out" '"vocab_reused": true' 
# The dlrm layout comes with DLRM's table sizes file, day_fea_count.npz.
expect dlrm_counts 0 "$DLPREP" criteo-preprocess --preset dlrm "$S/deepctr_200.tsv" "$S/nvtabular_day_0.gz" -o "$T/o18"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  expect numpy_counts 0 /usr/bin/python3 -c "
import json, numpy as np
with np.load('$T/o18/day_fea_count.npz') as f:
    assert f.files == ['counts'], f.files
    c = f['counts']
assert c.dtype == np.int32 and c.shape == (26,), (c.dtype, c.shape)
assert c.tolist() == json.load(open('$T/o18/stats.json'))['num_embeddings']
"
  expect numpy_load 0 /usr/bin/python3 -c "
import numpy as np, sys
d = np.load('$T/o5/day_0_dense.npy'); s = np.load('$T/o5/day_0_sparse.npy'); l = np.load('$T/o5/day_0_labels.npy')
assert d.shape == (1000, 13) and d.dtype == np.float32, d.shape
assert s.shape == (1000, 26) and s.dtype == np.int32
assert l.shape == (1000, 1) and l.dtype == np.int32
assert int(s.max()) < 5000 and int(s.min()) >= 0
"
fi

# SIGINT in the middle of a run: exit 130 and no temporary files left behind.
GEN=$(dirname "$DLPREP")/gen_criteo
if [ -x "$GEN" ]; then
  "$GEN" 400000 7 > "$T/big.tsv"
  "$DLPREP" -q criteo-preprocess --no-resume "$T/big.tsv" -o "$T/o6" > /dev/null 2>&1 &
  pid=$!
  # Once the day's output files are open (temporary names), within about 5 s.
  i=0
  while [ $i -lt 500 ] && [ -z "$(find "$T/o6" -name '.*tmp*' 2>/dev/null | head -1)" ]; do
    sleep 0.01; i=$((i + 1))
  done
  kill -INT $pid 2>/dev/null
  wait $pid
  got=$?
  if [ "$got" -ne 130 ] && [ "$got" -ne 0 ]; then echo "FAIL sigint: exit $got"; fail=1; else echo "ok   sigint (exit $got)"; fi
  left=$(find "$T/o6" -name '.*tmp*' 2>/dev/null | wc -l)
  if [ "$left" -ne 0 ]; then echo "FAIL sigint: $left temporary files left"; fail=1; fi
  # SIGINT before the run wrote a file (pass 1 of --output-format none writes nothing until its
  # end): the output directory it created, and its parent, go again.
  "$DLPREP" -q criteo-preprocess --output-format none "$T/big.tsv" -o "$T/o_sigint/sub" > /dev/null 2>&1 &
  pid=$!
  i=0
  while [ $i -lt 500 ] && [ ! -d "$T/o_sigint/sub" ]; do sleep 0.01; i=$((i + 1)); done
  kill -INT $pid 2>/dev/null
  wait $pid
  got=$?
  if [ "$got" -eq 130 ] && [ -e "$T/o_sigint" ]; then echo "FAIL sigint_empty: $T/o_sigint left behind"; fail=1
  elif [ "$got" -ne 130 ] && [ "$got" -ne 0 ]; then echo "FAIL sigint_empty: exit $got"; fail=1
  else echo "ok   sigint_empty (exit $got)"; fi
  # Binary input in two passes (--min-freq 2): the files stay mapped from pass 1 to pass 2
  # (--decode-cache auto) only within half of --max-memory, since mapped pages count in the RSS
  # (128 MB of rows here: twice the text's, so that the input outweighs the rest of the peak RSS
  # by a margin even in an ASan build, whose rest is near 50 MB). The limits are set from the
  # peak RSS of a run that maps nothing twice.
  cp "$T/big.tsv" "$T/big2.tsv"
  "$DLPREP" -q criteo-preprocess --output-format none --no-vocab --emit-binary "$T/big.bin" "$T/big.tsv" "$T/big2.tsv" -o "$T/emit"
  rm -f "$T/big2.tsv"
  bin_mb=$(( $(wc -c < "$T/big.bin") >> 20 ))
  expect bin_off 0 "$DLPREP" --json criteo-preprocess --input-format bin --modulus 5000 --chunk-mb 1 --min-freq 2 --decode-cache off "$T/big.bin" -o "$T/bo"
  rss_mb=$(( $(sed -n 's/.*"peak_rss_bytes": *\([0-9]*\).*/\1/p' "$T/bin_off.out" | head -1) >> 20 ))
  tight=$(( rss_mb + 16 )) roomy=$(( rss_mb + bin_mb + 32 ))
  [ $roomy -lt $(( 2 * bin_mb + 2 )) ] && roomy=$(( 2 * bin_mb + 2 ))
  if [ $tight -ge $(( 2 * bin_mb )) ]; then
    echo "FAIL bin_not_kept: peak RSS $rss_mb MB leaves no --max-memory below twice the $bin_mb MB input"; fail=1
  fi
  expect bin_kept 0 "$DLPREP" --json criteo-preprocess --input-format bin --modulus 5000 --chunk-mb 1 --min-freq 2 --max-memory ${roomy}M "$T/big.bin" -o "$T/bk"
  contains bin_kept "$T/bin_kept.out" '"decode_cache": true'
  expect bin_not_kept 0 "$DLPREP" --json criteo-preprocess --input-format bin --modulus 5000 --chunk-mb 1 --min-freq 2 --max-memory ${tight}M "$T/big.bin" -o "$T/bn"
  contains bin_not_kept "$T/bin_not_kept.out" '"decode_cache": false'
  for f in day_0_dense.npy day_0_sparse.npy day_0_labels.npy; do
    cmp -s "$T/bk/$f" "$T/bn/$f" && cmp -s "$T/bk/$f" "$T/bo/$f" || { echo "FAIL bin_kept: $f differs"; fail=1; }
  done
  rm -f "$T/big.tsv" "$T/big.bin"
fi
exit $fail
