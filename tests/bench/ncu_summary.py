#!/usr/bin/env python3
"""Where the GPU time goes, from Nsight Compute's CSV (`ncu --csv --page details ...`), for the GPU
session's summary (tests/bench/gpu_session.sh, steps l3-profile and criteo-profile).

Usage: ncu_summary.py LOG [--largest REGEX] [--per-kernel]
  --largest REGEX  every metric of the launch with the largest grid among kernels matching REGEX
                   (the benchmark's big batch, not its batch-1 latency launches)
  --per-kernel     per kernel name: launches, summed duration, share of the total, and the mean
                   DRAM, SM-throughput and achieved-occupancy percentages, longest first

LOG may hold other output too (the profiled program's, ncu's ==PROF== lines): only the CSV lines
(starting with a double quote) are read, and the first of them is the header. Columns are found
by name, so that newer ncu versions with more columns still parse. Exit 1 when nothing matched.
"""
import argparse
import csv
import re
import sys
from collections import defaultdict

TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
              "ms": 1e3, "second": 1e6, "s": 1e6}


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def grid_blocks(text):
    """'(97,920, 1, 1)' -> 97920: dimensions are split at ', ', digits may be grouped by ','."""
    product = 0
    for dim in text.strip("() ").split(", "):
        value = number(dim)
        if value is None:
            return 0
        product = (product or 1) * int(value)
    return product


def short_name(kernel):
    """'void ns::decode_kernel<(int)0>(Args)' -> 'ns::decode_kernel'."""
    return re.split(r"[(<]", re.sub(r"^void ", "", kernel), maxsplit=1)[0][:60]


def read_launches(path):
    """{launch id: {"kernel", "grid", "block", "metrics": [(section, name, unit, value)]}}."""
    with open(path, errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return {}
    header = rows[0]
    need = ["ID", "Kernel Name", "Grid Size", "Block Size", "Section Name", "Metric Name",
            "Metric Unit", "Metric Value"]
    if any(n not in header for n in need):
        sys.exit(f"ncu_summary.py: {path}: no ncu details CSV header (columns: {header})")
    col = {n: header.index(n) for n in need}
    launches = {}
    for row in rows[1:]:
        if len(row) < len(header) or row[col["ID"]] == "ID":
            continue
        launch = launches.setdefault(row[col["ID"]], {
            "kernel": row[col["Kernel Name"]], "grid": row[col["Grid Size"]],
            "block": row[col["Block Size"]], "metrics": []})
        launch["metrics"].append((row[col["Section Name"]], row[col["Metric Name"]],
                                  row[col["Metric Unit"]], row[col["Metric Value"]]))
    return launches


def duration_us(launch):
    for _, name, unit, value in launch["metrics"]:
        if name == "Duration" and number(value) is not None:
            return number(value) * TIME_UNITS.get(unit, 1.0)
    return None


def metric(launch, *names):
    for _, name, _, value in launch["metrics"]:
        if name in names and number(value) is not None:
            return number(value)
    return None


def largest(launches, pattern):
    matching = [(i, l) for i, l in launches.items() if re.search(pattern, l["kernel"])]
    if not matching:
        print(f"no launch of a kernel matching {pattern!r} in the profile")
        return 1
    launch_id, launch = max(matching, key=lambda item: grid_blocks(item[1]["grid"]))
    print(f"launch {launch_id} of {len(matching)} profiled: {launch['kernel'][:100]}")
    print(f"  grid {launch['grid']}, block {launch['block']}")
    section = None
    for sec, name, unit, value in launch["metrics"]:
        if sec != section:
            print(f"  [{sec}]")
            section = sec
        print(f"    {name:<44} {value:>14} {unit}")
    return 0


def per_kernel(launches):
    if not launches:
        print("no kernel launch in the profile")
        return 1
    by_name = defaultdict(list)
    for launch in launches.values():
        by_name[short_name(launch["kernel"])].append(launch)
    total = sum(duration_us(l) or 0 for l in launches.values())
    rows = []
    for name, group in by_name.items():
        spent = sum(duration_us(l) or 0 for l in group)

        def mean(*names):
            values = [v for v in (metric(l, *names) for l in group) if v is not None]
            return f"{sum(values) / len(values):5.1f}" if values else "    -"

        rows.append((spent, name, len(group), mean("DRAM Throughput"),
                     mean("Compute (SM) Throughput", "SM Throughput"),
                     mean("Achieved Occupancy")))
    print(f"{'kernel':<60} {'launches':>8} {'us':>10} {'share':>6} {'dram%':>6} {'sm%':>6} "
          f"{'occ%':>6}")
    for spent, name, count, dram, sm, occupancy in sorted(rows, reverse=True):
        share = 100 * spent / total if total else 0
        print(f"{name:<60} {count:>8} {spent:>10.1f} {share:>5.1f}% {dram:>6} {sm:>6} "
              f"{occupancy:>6}")
    print(f"{'all kernels':<60} {len(launches):>8} {total:>10.1f}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--largest", metavar="REGEX")
    parser.add_argument("--per-kernel", action="store_true")
    args = parser.parse_args()
    launches = read_launches(args.log)
    rc = 0
    if args.largest:
        rc |= largest(launches, args.largest)
    if args.per_kernel:
        rc |= per_kernel(launches)
    return rc


if __name__ == "__main__":
    sys.exit(main())
