#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# l3 verify's "ok" lines and l3 encode's --json files are written as files are done, in input
# order, not held to the end: with the last input a FIFO that nobody writes yet, the results of
# the files before it are already on stdout.
make_pnm a.ppm 4 4 3 1
dlprep -q l3 encode a.ppm -o a.l3
mkdir d l3
for i in $(seq 100 299); do
  ln a.ppm d/$i.ppm
  ln a.l3 l3/$i.l3
done
mkfifo last.ppm last.l3
# waits_for_stdout OUT FIFO SOURCE: whether OUT has text before FIFO is fed with SOURCE.
waits_for_stdout() {
  local streamed=0
  for _ in $(seq 1 500); do
    [ -s "$1" ] && break
    sleep 0.02
  done
  [ -s "$1" ] && streamed=1
  cat "$3" >"$2"
  return $((1 - streamed))
}
dlprep -j2 l3 verify l3 last.l3 >verify.txt 2>err &
pid=$!
streamed=0
waits_for_stdout verify.txt last.l3 a.l3 && streamed=1
wait $pid || fail "l3 verify: exit $?: $(cat err)"
[ $streamed = 1 ] || fail "l3 verify: nothing on stdout before the last file was read"
[ "$(wc -l <verify.txt)" = 201 ] || fail "l3 verify: $(wc -l <verify.txt) lines"
[ "$(head -1 verify.txt)" = 'l3/100.l3: ok, 4x4x3, every patch checksum matches' ] ||
  fail "l3 verify: $(head -1 verify.txt)"
[ "$(tail -1 verify.txt)" = 'last.l3: ok, 4x4x3, every patch checksum matches' ] ||
  fail "l3 verify: $(tail -1 verify.txt)"
dlprep -j2 -q --json l3 encode d last.ppm -o out >encode.json 2>err &
pid=$!
streamed=0
waits_for_stdout encode.json last.ppm a.ppm && streamed=1
wait $pid || fail "l3 encode: exit $?: $(cat err)"
[ $streamed = 1 ] || fail "l3 encode: nothing on stdout before the last file was read"
json_check '[f["input"] for f in d["files"]] == ["d/%d.ppm" % i for i in range(100, 300)] + ["last.ppm"]' <encode.json
json_check 'd["encoded"] == 201 and d["failed"] == 0 and list(d)[:2] == ["schema", "files"]' <encode.json
