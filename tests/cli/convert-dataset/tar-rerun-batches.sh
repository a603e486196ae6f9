#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Tar layout across batches (64 samples per thread): a rerun keeps every shard when a sample
# that fails (--on-error skip) ends a batch or sits inside one; a changed sample rewrites the
# shards from its own on, and the result is the dataset a fresh conversion makes, byte for byte.
mkdir -p src/a src/b
/usr/bin/python3 - <<'PY'
import random
for i in range(150):
    rnd = random.Random(i)
    px = bytes(rnd.randrange(256) for _ in range(12 * 10 * 3))
    with open("src/%s/%03d.ppm" % ("ab"[i // 100], i), "wb") as f:
        f.write(b"P6\n12 10\n255\n" + px)
PY
# With -j1 a batch is 64 samples: 063 ends the first, 070 is inside the second.
for bad in a/063 a/070; do head -c 20 src/$bad.ppm >cut && mv cut src/$bad.ppm; done
snapshot() { stat -c '%n %i %y' "$1"/dataset.json "$1"/samples.jsonl "$1"/data/*; }
for j in 1 2; do
  rm -rf ds fresh
  dlprep -q -j$j convert-dataset src ds --to png:1 --shards 8kB --on-error skip 2>/dev/null ||
    fail "-j$j: first run failed"
  snapshot ds >before.txt
  sleep 0.02
  dlprep -q -j$j --json convert-dataset src ds --to png:1 --shards 8kB --on-error skip \
    >rerun.json 2>/dev/null || fail "-j$j: rerun failed"
  json_check 'd["converted"] == 0 and d["failed"] == 2 and d["up_to_date"] == 148' <rerun.json
  snapshot ds | cmp -s before.txt - || fail "-j$j: a rerun past skipped samples rewrote the dataset"

  # 090 changes: the shards before the one holding it stay as they are.
  cp src/a/090.ppm saved.ppm
  printf 'P6\n12 10\n255\n%0360d' 0 >src/a/090.ppm
  touch -d '+2 seconds' src/a/090.ppm
  first=$(grep -n '"key":"a/090"' ds/samples.jsonl | sed 's/.*"location":"\([^"]*\)".*/\1/')
  dlprep -q -j$j --json convert-dataset src ds --to png:1 --shards 8kB --on-error skip \
    >change.json 2>/dev/null || fail "-j$j: run after a change failed"
  json_check 'd["converted"] >= 1 and d["failed"] == 2 and d["converted"] + d["up_to_date"] == 148' \
    <change.json
  while read -r name rest; do
    [[ $name < ds/$first ]] || continue
    grep -qxF "$name $rest" <(snapshot ds) || fail "-j$j: $name before the change was rewritten"
  done <before.txt
  dlprep -q -j$j convert-dataset src fresh --to png:1 --shards 8kB --on-error skip 2>/dev/null
  cmp -s ds/samples.jsonl fresh/samples.jsonl || fail "-j$j: the index differs from a fresh run's"
  for f in fresh/data/*; do
    cmp -s "$f" "ds/data/${f##*/}" || fail "-j$j: ${f##*/} differs from a fresh run's"
  done
  [ "$(ls ds/data | wc -l)" = "$(ls fresh/data | wc -l)" ] || fail "-j$j: shard counts differ"
  dlprep -q dataset verify ds || fail "-j$j: verify failed"
  mv saved.ppm src/a/090.ppm
done
