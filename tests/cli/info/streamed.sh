#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# The --json listing is written as files are read, not held to the end: with its last file a
# FIFO that nobody writes yet, the files before it are already on stdout. The document is
# formatted as one dump with a two-space indent (Python's json.dumps(indent=2) gives the same).
make_pnm a.ppm 4 4 3 1
mkdir d
for i in $(seq 100 299); do ln a.ppm d/$i.ppm; done
mkfifo last.ppm
dlprep --json info d last.ppm >out.json 2>err &
pid=$!
for _ in $(seq 1 500); do
  [ -s out.json ] && break
  sleep 0.02
done
streamed=0
[ -s out.json ] && streamed=1
cat a.ppm >last.ppm
wait $pid || fail "exit $?: $(cat err)"
[ $streamed = 1 ] || fail "nothing on stdout before the last file was read"
json_check 'len(d["files"]) == 201 and d["files"][200]["path"] == "last.ppm"' <out.json
same_as_python_dump() {
  /usr/bin/python3 -c 'import json, sys
t = sys.stdin.read()
sys.exit(0 if t == json.dumps(json.loads(t), indent=2, ensure_ascii=False) + "\n" else 1)' ||
    fail "$1: not formatted as one dump"
}
same_as_python_dump "several files" <out.json
echo 'no image' >bad.ppm
expect_exit 1 dlprep --json info a.ppm bad.ppm 2>/dev/null >two.json
same_as_python_dump "an error" <two.json
mkdir empty  # nothing found at all: a usage error, and its document
expect_exit 2 dlprep -q --json info empty >none.json
same_as_python_dump "no file" <none.json
json_check 'd["schema"] == "dlprep.error/1" and d["error"] == "empty: no image files found"' <none.json
