# Sourced by every CLI test case: strict mode and small helpers. Runs in the case's scratch folder
# with `dlprep` on PATH and $SAMPLE_DATA, $CLI_TESTS set by run.sh.
set -euo pipefail

# fail MESSAGE: ends the case with exit 99 (never an exit code dlprep uses).
fail() {
  echo "test failed: $*" >&2
  exit 99
}

# skip REASON: ends the case as skipped (exit 77, which CTest reports as "Skipped"), for a case
# whose prerequisite this machine lacks. The reason is printed by run.sh.
skip() {
  echo "$*" >&2
  exit 77
}

# expect_exit CODE COMMAND...: runs COMMAND and fails the case unless it exits with CODE.
expect_exit() {
  local want=$1
  shift
  local got=0
  "$@" || got=$?
  [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want"
}

# with_room_for N COMMAND...: runs COMMAND with room for N more descriptors than are open: the
# open-file limit (ulimit -n) is N above the lowest free descriptor (those that ctest or the shell
# left open vary). Its output is redirected from outside: under a tight limit it could not open
# the files itself.
with_room_for() {
  local n=$1
  shift
  (
    fd=3
    while [ -e /proc/$BASHPID/fd/$fd ]; do fd=$((fd + 1)); done
    ulimit -n $((fd + n))
    exec "$@"
  )
}

# sanitized_build: whether dlprep is an ASan/UBSan build, whose runtime needs descriptors of its
# own (it checks memory through a pipe): cases that leave none to spare skip it.
sanitized_build() {
  grep -q __ubsan_handle "$(readlink -f "$(command -v dlprep)")"
}

# interrupt_when PID CONDITION: sends SIGINT to PID once the shell command CONDITION succeeds
# (tried every 10 ms for up to 10 s), and waits for PID: its exit status is then in $code.
interrupt_when() {
  local pid=$1 condition=$2
  for _ in $(seq 1 1000); do
    eval "$condition" && break
    sleep 0.01
  done
  kill -INT "$pid"
  code=0
  wait "$pid" || code=$?
}

# with_small_disk SIZE SCRIPT: for the full-disk cases, runs the bash SCRIPT (common.sh sourced)
# as root of a private user and mount namespace in which ./small is a tmpfs of SIZE (tmpfs's
# units: 300k); `mount -o remount,size=20m small` in SCRIPT grows it. Skips the case where user
# namespaces are not allowed.
with_small_disk() {
  unshare -Urm true 2>/dev/null || skip "user namespaces are not allowed here (needed for a private tmpfs)"
  mkdir -p small
  unshare -Urm bash -c '. "$CLI_TESTS/common.sh"
mount -t tmpfs -o "size=$1" tmpfs small
eval "$2"' with_small_disk "$1" "$2"
}

# make_pnm FILE WIDTH HEIGHT CHANNELS(1|3) SEED: a deterministic noisy gradient as binary PGM/PPM.
make_pnm() {
  /usr/bin/python3 - "$@" <<'PY'
import random, sys
path, w, h, c, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(seed)
px = bytearray()
for y in range(h):
    for x in range(w):
        for ch in range(c):
            px.append((x * 3 + y * 5 + ch * 40 + rnd.randrange(8)) & 255)
magic = b"P5" if c == 1 else b"P6"
with open(path, "wb") as f:
    f.write(magic + b"\n%d %d\n255\n" % (w, h) + bytes(px))
PY
}

# flip_byte FILE OFFSET: xors one byte (negative OFFSET counts from the end).
flip_byte() {
  /usr/bin/python3 - "$@" <<'PY'
import sys
path, off = sys.argv[1], int(sys.argv[2])
d = bytearray(open(path, "rb").read())
d[off] ^= 0x5A
open(path, "wb").write(d)
PY
}

# json_check PYTHON_EXPR < doc.json: parses stdin as JSON (as `d`) and fails unless EXPR is true.
json_check() {
  /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
ok = eval(sys.argv[1])
sys.exit(0 if ok else 1)' "$1" || fail "json check failed: $1"
}

# no_temp_files DIR: fails if an interrupted or failed write left a temporary file in DIR.
no_temp_files() {
  if [ -d "$1" ] && find "$1" -name '.*.tmp.*' | grep -q .; then
    fail "temporary files left in $1: $(find "$1" -name '.*.tmp.*')"
  fi
}

# Note for case authors: with pipefail, `producer | grep -q PATTERN` can fail at random: grep -q
# exits at the first match and the producer may then die of SIGPIPE. Match a file or a variable
# (grep -q PATTERN file, grep -q PATTERN <<<"$text") instead.
