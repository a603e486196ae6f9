#!/bin/sh
# Differential test: dlprep's L3 decoder against the independent NumPy reference decoder
# (l3_reference.py, written from the specification dlprep-l3(5) alone), on generated images
# (every channel count, awkward sizes, flat, noise, gradients) and the sample photographs
# encoded by dlprep at every patch size, on L3 files written directly from the specification
# with random codes (l3_cases.py synth), on malformed files and every single-bit error of a
# small file, which both decoders must reject, and on random changes with every checksum
# recomputed, which both must accept or reject alike.
# Usage: reference_test.sh DLPREP SOURCE_DIR SCRATCH_DIR
# Needs NumPy and PIL for /usr/bin/python3 (Debian's python3-numpy, python3-pil) or for
# $PYTHON; exits 77 (skipped) without them.
set -eu
export PYTHONDONTWRITEBYTECODE=1
DLPREP=$1
SRC=$2
SCRATCH=$3
PY=${PYTHON:-/usr/bin/python3}
$PY -c 'import numpy' 2>/dev/null || { echo "no NumPy for $PY: skipped"; exit 77; }
$PY -c 'import PIL' 2>/dev/null || { echo "no PIL (python3-pil) for $PY: skipped"; exit 77; }
T=$SRC/tests/l3
REF=$T/l3_reference.py
CASES=$T/l3_cases.py
SAMPLES=$SRC/sample_data/images
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
S=$SCRATCH
fail=0

# 1. Inputs: generated images, and L3 files written from the specification with random codes.
$PY "$CASES" images "$S/img" >/dev/null
$PY "$CASES" synth "$S/enc/synth" >/dev/null

# 2. dlprep encodes the generated images and the samples with every patch size.
for p in 8 16 32 64 128 256 auto; do
  "$DLPREP" -q l3 encode "$S/img/small/" "$SAMPLES/" -o "$S/enc/p$p/" --patch $p
done
"$DLPREP" -q l3 encode "$S/img/big/" -o "$S/enc/big/"

# 3. dlprep decodes every L3 file to raw HWC bytes (mirrored tree under raw/).
"$DLPREP" -q l3 decode "$S/enc/" -o "$S/raw/" --to raw

# 3b. The other L3 kernels (DLPREP_L3_ISA, dlprep(1)): the encoder must write the same bytes
#     ("identically in its scalar and SIMD kernels", dlprep-l3(5)) and the decoder the same
#     pixels as the default kernels, which step 5 compares with the reference.
for isa in scalar avx2 gfni; do
  why=
  for p in 8 32 256 auto; do
    DLPREP_L3_ISA=$isa "$DLPREP" -q l3 encode "$S/img/small/" "$SAMPLES/" -o "$S/isa_$isa/enc/p$p/" --patch $p
    diff -r "$S/enc/p$p" "$S/isa_$isa/enc/p$p" > /dev/null || why="$why encoder output differs for --patch $p;"
  done
  DLPREP_L3_ISA=$isa "$DLPREP" -q l3 decode "$S/enc/" -o "$S/isa_$isa/raw/" --to raw
  diff -r "$S/raw" "$S/isa_$isa/raw" > /dev/null || why="$why decoded pixels differ;"
  if [ -z "$why" ]; then echo "ok DLPREP_L3_ISA=$isa: same files and pixels as the default kernels"
  else echo "FAIL DLPREP_L3_ISA=$isa:$why"; fail=1; fi
done

# 3c. The CUDA decoder, where this build has CUDA and a device is usable (else status 77).
crc=0
"$DLPREP" -q l3 decode "$S/enc/" -o "$S/cuda/raw/" --to raw --device cuda 2> "$S/cuda.err" || crc=$?
if [ $crc = 77 ]; then
  echo "ok cuda: skipped: $(head -1 "$S/cuda.err")"
elif [ $crc = 0 ] && diff -r "$S/raw" "$S/cuda/raw" > /dev/null; then
  echo "ok cuda: same pixels as the CPU decoder"
else
  echo "FAIL cuda: status $crc: $(head -3 "$S/cuda.err")"; diff -rq "$S/raw" "$S/cuda/raw" | head -5
  fail=1
fi

# 4. The reference decodes every L3 file, in two processes (two cores).
(cd "$S/enc" && find . -name '*.l3' | sed 's|^\./||; s|\.l3$||' | sort) > "$S/names.txt"
(cd "$S/enc" && find . -type d) | while read -r d; do mkdir -p "$S/ref/$d"; done
: > "$S/batch0.txt"
: > "$S/batch1.txt"
: > "$S/compare.txt"
k=0
while read -r n; do
  echo "$S/enc/$n.l3 $S/ref/$n.npy" >> "$S/batch$((k % 2)).txt"
  k=$((k + 1))
  base=${n##*/}
  exp=
  case $n in
    synth/*) ;;
    big/*) exp=$S/img/big/$base.npy ;;
    *)
      if [ -f "$S/img/small/$base.npy" ]; then
        exp=$S/img/small/$base.npy
      else
        # the lossless samples are the expected pixels; JPEG and lossy WebP are not
        for f in "$SAMPLES/$base".png "$SAMPLES/$base".ppm "$SAMPLES/$base".pgm \
                 "$SAMPLES/$base".bmp "$SAMPLES/$base".webp; do
          case $f in *lossy*) continue ;; esac
          [ -f "$f" ] && exp=$f
        done
      fi ;;
  esac
  echo "$n $S/ref/$n.npy $S/raw/$n.raw $exp" >> "$S/compare.txt"
done < "$S/names.txt"
$PY "$REF" --batch "$S/batch0.txt" 2> "$S/ref0.err" & p0=$!
$PY "$REF" --batch "$S/batch1.txt" 2> "$S/ref1.err" & p1=$!
wait $p0 || true
wait $p1 || true
cat "$S/ref0.err" "$S/ref1.err"

# 5. Pixel-exact comparison: reference == dlprep, and reference == the original pixels.
$PY "$CASES" compare "$S/compare.txt" || fail=1

# 6. The automatic patch size: 32 up to 1280x720 pixels, 64 up to 1920x1080 (dlprep-l3(1)).
for pair in big/c4_auto32_960x960:5 big/c1_auto64_961x960:6 p8/c2_w9:3 pauto/kay_256x256:5; do
  n=${pair%:*}
  want=${pair#*:}
  got=$(od -An -tu1 -j10 -N1 "$S/enc/$n.l3" | tr -d ' ')
  if [ "$got" = "$want" ]; then echo "ok patch_log2 $n $got"
  else echo "FAIL patch_log2 $n: $got, expected $want"; fail=1; fi
done

# 7. Malformed files: both decoders must reject each (the reference at the step the page
#    gives, with one line and no traceback; dlprep with status 1 and no output).
$PY "$CASES" hostile "$S/enc/p8/c2_w17.l3" "$S/hostile" >/dev/null
mkdir -p "$S/hostile_out"
# the reference in one process (--batch): one line per rejected file on standard error
sed "s|^\([^ ]*\) .*|$S/hostile/\1.l3 $S/hostile_out/\1.npy|" "$S/hostile/list.txt" \
  > "$S/hostile_batch.txt"
$PY "$REF" --batch "$S/hostile_batch.txt" 2> "$S/hostile_ref.err" || true
while read -r n step; do
  f=$S/hostile/$n.l3
  grep -F "$f:" "$S/hostile_ref.err" > "$S/hostile_out/$n.ref" || true
  rc=1
  ! grep -q 'internal error' "$S/hostile_out/$n.ref" || rc=internal
  drc=0
  "$DLPREP" -q l3 decode "$f" -o "$S/hostile_out/$n.raw" --to raw \
    2> "$S/hostile_out/$n.dlprep" || drc=$?
  why=
  [ "$rc" = 1 ] || why="$why reference exit $rc;"
  [ "$(wc -l < "$S/hostile_out/$n.ref")" = 1 ] || why="$why reference printed not one line;"
  grep -q "step $step:" "$S/hostile_out/$n.ref" || why="$why reference: $(cat "$S/hostile_out/$n.ref");"
  [ ! -e "$S/hostile_out/$n.npy" ] || why="$why reference wrote pixels;"
  [ "$drc" = 1 ] || why="$why dlprep exit $drc;"
  [ ! -e "$S/hostile_out/$n.raw" ] || why="$why dlprep wrote pixels;"
  if [ -z "$why" ]; then
    echo "ok hostile $n (step $step): $(sed -n 's/.*l3 decode: [^:]*: //p' "$S/hostile_out/$n.dlprep" | head -1)"
  else
    echo "FAIL hostile $n (step $step):$why"; fail=1
  fi
done < "$S/hostile/list.txt"
# the single-file command line: status 1 and one line for a bad or missing file
for n in empty table_past_end payload_sum no_such_file; do
  rc=0
  $PY "$REF" "$S/hostile/$n.l3" "$S/hostile_out/$n.single.npy" 2> "$S/hostile_out/$n.single" || rc=$?
  if [ $rc = 1 ] && [ "$(wc -l < "$S/hostile_out/$n.single")" = 1 ] && \
     ! grep -q -e Traceback -e 'internal error' "$S/hostile_out/$n.single"; then
    echo "ok reference command line $n: $(cat "$S/hostile_out/$n.single")"
  else
    echo "FAIL reference command line $n: exit $rc, $(cat "$S/hostile_out/$n.single")"; fail=1
  fi
done

# 8. Every single-bit error of a small file (3 channels, subtract-green, 2 patches) is
#    detected ("A single-bit error anywhere in a file is always detected").
$PY "$CASES" bitflips "$S/enc/p8/c3_tiny_7x9.l3" "$S/flips" > "$S/flips.count"
nflips=$(cat "$S/flips.count")
(cd "$S/flips" && ls) | sed "s|^\(.*\)\.l3$|$S/flips/\1.l3 $S/flips_ref/\1.npy|" > "$S/flips.txt"
mkdir -p "$S/flips_ref"
$PY "$REF" --batch "$S/flips.txt" 2> "$S/flips_ref.err" || true
refrej=$(grep -c '^l3_reference: .*: step [1-9]: ' "$S/flips_ref.err" || true)
refout=$(find "$S/flips_ref" -name '*.npy' | wc -l)
# Files named on the command line are always processed (a directory walk skips non-L3 magic).
(cd "$S/flips" && ls | sed "s|^|$S/flips/|" | xargs "$DLPREP" -q l3 decode -o "$S/flips_dlprep/" --to raw) \
  2> "$S/flips_dlprep.err" || true
dlrej=$(grep -c 'error: l3 decode: ' "$S/flips_dlprep.err" || true)
dlout=$(find "$S/flips_dlprep" -type f 2>/dev/null | wc -l)
if [ "$refrej" = "$nflips" ] && [ "$refout" = 0 ] && [ "$dlrej" = "$nflips" ] && [ "$dlout" = 0 ]; then
  echo "ok bitflips: all $nflips single-bit errors rejected by both decoders"
else
  echo "FAIL bitflips: of $nflips, reference rejected $refrej (wrote $refout), dlprep rejected $dlrej (wrote $dlout)"
  fail=1
fi

# 9. Random changes to patches and table ends with every checksum recomputed (what the fuzz
#    target does): both decoders must accept exactly the same files and decode them alike.
$PY "$CASES" mutants "$S/mut" "$S/enc/p8/c3_noise_17x63.l3" "$S/enc/p16/c2_w33.l3" \
  "$S/enc/synth/c4_p16_sg.l3" "$S/enc/synth/c1_p8_random.l3" "$S/enc/p32/c4_w31.l3" > "$S/mut.count"
(cd "$S/mut" && ls) | sed "s|^\(.*\)\.l3$|$S/mut/\1.l3 $S/mut_ref/\1.npy|" > "$S/mut.txt"
mkdir -p "$S/mut_ref"
$PY "$REF" --batch "$S/mut.txt" 2> "$S/mut_ref.err" || true
(cd "$S/mut" && ls | sed "s|^|$S/mut/|" | xargs "$DLPREP" -q l3 decode -o "$S/mut_dlprep/" --to raw) \
  2> "$S/mut_dlprep.err" || true
: > "$S/mut_compare.txt"
mfail=0
nacc=0
for f in "$S"/mut/*.l3; do
  n=${f##*/}
  n=${n%.l3}
  if [ -f "$S/mut_ref/$n.npy" ] && [ -f "$S/mut_dlprep/$n.raw" ]; then
    echo "mutant/$n $S/mut_ref/$n.npy $S/mut_dlprep/$n.raw" >> "$S/mut_compare.txt"
    nacc=$((nacc + 1))
  elif [ -f "$S/mut_ref/$n.npy" ]; then
    echo "FAIL mutant/$n: accepted by the reference, rejected by dlprep:" \
      "$(grep "/$n.l3:" "$S/mut_dlprep.err" | sed 's/.*l3 decode: [^:]*: //')"
    mfail=1
  elif [ -f "$S/mut_dlprep/$n.raw" ]; then
    echo "FAIL mutant/$n: accepted by dlprep, rejected by the reference:" \
      "$(grep "/$n.l3:" "$S/mut_ref.err")"
    mfail=1
  fi
done
if grep 'internal error' "$S/mut_ref.err"; then mfail=1; fi
$PY "$CASES" compare "$S/mut_compare.txt" > "$S/mut_compare.out" || mfail=1
grep -v '^ok' "$S/mut_compare.out" || true
if [ $mfail = 0 ]; then
  echo "ok mutants: $(cat "$S/mut.count") files with checksums recomputed, $nacc accepted and decoded alike by both, the rest rejected by both"
else
  echo "FAIL mutants: see above"; fail=1
fi
exit $fail
