#!/usr/bin/env bash
# A run killed with SIGKILL (the OOM killer, a scheduler) leaves its temp files ".NAME.tmp.XXXXXX"
# beside the outputs. The next run removes those of its own outputs that no live run holds (a live
# AtomicFile keeps its temp file flock()ed) and that are a minute old, and nothing else.
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 20 20 3 1
make_pnm b.ppm 20 20 1 2
mkdir -p out
echo dead >out/.a.l3.tmp.Dead01              # a killed encode's, of this run's output a.l3
echo dead >out/.other.l3.tmp.Dead02          # of no output of this run
echo live >out/.b.l3.tmp.Live01              # held by a live run (flock, as AtomicFile does)
echo note >out/.a.l3.notes                    # not a temp file name
touch -d '1 hour ago' out/.*.tmp.*
echo young >out/.b.l3.tmp.Young1             # unlocked, but written just now: maybe live
flock out/.b.l3.tmp.Live01 sleep 60 &
holder=$!
trap 'kill $holder 2>/dev/null' EXIT
for _ in $(seq 100); do  # until flock(1) holds the lock
  flock -n out/.b.l3.tmp.Live01 true || break
  sleep 0.05
done
dlprep l3 encode a.ppm b.ppm -o out 2>/dev/null
[ ! -e out/.a.l3.tmp.Dead01 ] || fail "the dead run's temp file of a.l3 is still there"
[ -e out/.other.l3.tmp.Dead02 ] || fail "a temp file of another output was removed"
[ -e out/.b.l3.tmp.Live01 ] || fail "a live run's temp file was removed"
[ -e out/.a.l3.notes ] || fail "a file that is no temp file was removed"
[ -e out/.b.l3.tmp.Young1 ] || fail "a temp file written just now was removed"
cmp <(dlprep l3 decode out/a.l3 -o - --to ppm) a.ppm || fail "a.l3 is not a.ppm"

# An up-to-date rerun cleans up too, in every folder of a tree; decode outputs whose extension
# depends on the channels (ppm, pgm) are both covered.
mkdir -p tree/x && cp a.ppm tree/x/a.ppm && cp b.ppm tree/b.ppm
dlprep l3 encode tree -o enc 2>/dev/null
dlprep l3 decode enc -o dec --to ppm 2>/dev/null
echo dead >enc/x/.a.l3.tmp.Dead03
echo dead >dec/.b.pgm.tmp.Dead04
echo dead >dec/x/.a.ppm.tmp.Dead05
touch -d '1 hour ago' enc/x/.a.l3.tmp.Dead03 dec/.b.pgm.tmp.Dead04 dec/x/.a.ppm.tmp.Dead05
dlprep l3 encode tree -o enc 2>err.txt
grep -q 'skipped 2 up to date' err.txt || fail "encode rerun: $(cat err.txt)"
dlprep l3 decode enc -o dec --to ppm 2>err.txt
grep -q 'skipped 2 up to date' err.txt || fail "decode rerun: $(cat err.txt)"
for f in enc/x/.a.l3.tmp.Dead03 dec/.b.pgm.tmp.Dead04 dec/x/.a.ppm.tmp.Dead05; do
  [ ! -e "$f" ] || fail "$f is still there"
done
