#!/usr/bin/env python3
"""Where the GPU time goes, from Nsight Compute's CSV, for the GPU session's summary
(tests/bench/gpu_session.sh, steps l3-profile and criteo-profile).

Usage: ncu_summary.py CSV [--largest REGEX] [--per-kernel]
       ncu_summary.py CSV --source [--top N]
  --largest REGEX  (`ncu --import R --csv --page details`) every metric of the launch with the
                   largest grid among kernels matching REGEX (the benchmark's big batch, not its
                   batch-1 latency launches), as `section | name | value unit`, then the rules
                   ncu applied to it: name, estimated speedup, description on one line
  --per-kernel     (the same page) per kernel name: the profiled launches and the median of their
                   duration, SM and memory throughput, DRAM throughput and achieved occupancy,
                   longest first
  --source         (`ncu --import R --csv --page source --print-source cuda,sass` or `sass`) the
                   top N (25) CUDA source lines and SASS instructions by instructions executed
                   and by warp stall samples, summed over the profiled launches

The details page: the header is the first line starting with "ID"; columns are found by name, so
that newer ncu versions with more columns still parse; metric rows may be shorter than the header
(ncu leaves the rule columns off), rule rows have no metric name. Exit 1 when nothing matched.
The source page's layout differs between ncu versions: columns are matched by name, ignoring
case; when the needed ones are missing it prints what it found and exits 0.
"""
import argparse
import csv
import io
import re
import statistics
import sys
from collections import defaultdict

TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
              "ms": 1e3, "second": 1e6, "s": 1e6}


def number(text):
    """'5,752,790' -> 5752790.0; None for 'no data', '' and the like."""
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def grid_blocks(text):
    """'(97920, 1, 1)' or '(97,920, 1, 1)' -> 97920: dimensions are split at ', ', digits may be
    grouped by ','."""
    product = 0
    for dim in text.strip("() ").split(", "):
        value = number(dim)
        if value is None:
            return 0
        product = (product or 1) * int(value)
    return product


def short_name(kernel):
    """'void ns::decode_kernel<(int)0>(Args)' -> 'decode_kernel' (the namespaces are common)."""
    name = re.split(r"[(<]", re.sub(r"^void ", "", kernel), maxsplit=1)[0]
    return name.rsplit("::", 1)[-1][:60]


def one_line(text, width=200):
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def read_launches(path):
    """{launch id: {"kernel", "grid", "block", "metrics": [(section, name, unit, value)],
    "rules": [(section, name, type, speedup type, speedup, description)]}}, in launch order."""
    with open(path, errors="replace") as f:
        text = f.read()
    start = text.find('"ID",')
    if start < 0:
        sys.exit(f"ncu_summary.py: {path}: no ncu details CSV header (a line starting with "
                 f"\"ID\"); it starts with: {text[:300]!r}")
    rows = csv.reader(io.StringIO(text[start:]))
    header = next(rows)
    need = ["ID", "Kernel Name", "Grid Size", "Block Size", "Section Name", "Metric Name",
            "Metric Unit", "Metric Value"]
    if any(n not in header for n in need):
        sys.exit(f"ncu_summary.py: {path}: no ncu details CSV header (columns: {header})")
    col = {n: i for i, n in enumerate(header)}

    def cell(row, name):
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    launches = {}
    for row in rows:
        if len(row) <= col["Metric Value"] or not row[0].isdigit():
            continue  # a repeated header, or a line of ncu's own
        launch = launches.setdefault(row[col["ID"]], {
            "kernel": cell(row, "Kernel Name"), "grid": cell(row, "Grid Size"),
            "block": cell(row, "Block Size"), "metrics": [], "rules": []})
        if cell(row, "Metric Name"):
            launch["metrics"].append((cell(row, "Section Name"), cell(row, "Metric Name"),
                                      cell(row, "Metric Unit"), cell(row, "Metric Value")))
        elif cell(row, "Rule Name"):
            launch["rules"].append((cell(row, "Section Name"), cell(row, "Rule Name"),
                                    cell(row, "Rule Type"), cell(row, "Estimated Speedup Type"),
                                    cell(row, "Estimated Speedup"),
                                    cell(row, "Rule Description")))
    return launches


def duration_us(launch):
    for _, name, unit, value in launch["metrics"]:
        if name == "Duration" and number(value) is not None:
            return number(value) * TIME_UNITS.get(unit, 1.0)
    return None


def metric(launch, *names, unit=None):
    for _, name, unit_, value in launch["metrics"]:
        if name in names and unit in (None, unit_) and number(value) is not None:
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
    for section, name, unit, value in launch["metrics"]:
        print(f"  {section} | {name} | {value} {unit}".rstrip())
    for section, name, kind, speedup_type, speedup, description in launch["rules"]:
        gain = f"{speedup_type} {speedup}%".strip() if speedup else "-"
        print(f"  rule {name} ({section}, {kind}) | est. speedup {gain} | {one_line(description)}")
    return 0


def per_kernel(launches):
    if not launches:
        print("no kernel launch in the profile")
        return 1
    by_name = defaultdict(list)
    for launch in launches.values():
        by_name[short_name(launch["kernel"])].append(launch)

    def median(group, *names, time=False):
        values = [duration_us(l) if time else metric(l, *names, unit="%") for l in group]
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    rows = []
    for name, group in by_name.items():
        rows.append((median(group, time=True) or 0, name, len(group),
                     median(group, "Compute (SM) Throughput", "SM Throughput"),
                     median(group, "Memory Throughput"), median(group, "DRAM Throughput"),
                     median(group, "Achieved Occupancy")))
    print("per kernel, the median of its profiled launches (percentages of the device's peak):")
    print(f"{'kernel':<32} {'launches':>8} {'median_us':>10} {'sm%':>6} {'mem%':>6} {'dram%':>6} "
          f"{'occ%':>6}")

    def pct(value):
        return f"{value:6.1f}" if value is not None else "     -"

    for us, name, count, sm, mem, dram, occupancy in sorted(rows, reverse=True):
        print(f"{name:<32} {count:>8} {us:>10.1f} {pct(sm)} {pct(mem)} {pct(dram)} "
              f"{pct(occupancy)}")
    return 0


# The source page: column names as ncu 2023-2025 print them, matched ignoring case; the first
# that exists wins.
SOURCE_COLUMNS = {
    "text": ["source"],
    "address": ["address"],
    "line": ["#", "line", "line number", "source line"],
    "file": ["file", "source file", "file name"],
    "executed": ["instructions executed", "warp instructions executed", "inst_executed"],
    "stalls": ["warp stall sampling (all samples)", "warp stall sampling (all)",
               "# samples", "sampling data (all)", "warp stall sampling (not-issued samples)"],
}
SOURCE_FILE = re.compile(r"\.(cu|cuh|cpp|hpp|h|inl)$", re.IGNORECASE)
SASS_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$|^[0-9a-fA-F]{8,}$")


def source_header(row):
    """{role: column index} when `row` is a source-page header (a Source column and a count)."""
    lower = [c.strip().lower() for c in row]
    found = {}
    for role, names in SOURCE_COLUMNS.items():
        for n in names:
            if n in lower:
                found[role] = lower.index(n)
                break
    if "text" in found and ("executed" in found or "stalls" in found):
        return found
    return None


def source(path, top):
    with open(path, errors="replace") as f:
        text = f.read()
    rows = list(csv.reader(io.StringIO(text)))
    header, cols, kernel, where = None, {}, "", ""
    cuda_lines = defaultdict(lambda: [0.0, 0.0, ""])  # (file, line) -> executed, stalls, text
    sass = defaultdict(lambda: [0.0, 0.0, ""])  # (kernel, address, text) -> ..., CUDA line
    cuda_ordinal, current_line = 0, ""  # the CUDA line the SASS rows below it belong to
    kernels, sass_rows, line_text = set(), 0, {}
    for row in rows:
        if not row:
            continue
        found = source_header(row)
        if found:
            header, cols, cuda_ordinal, current_line = row, found, 0, ""
            continue
        # Table rows may leave empty trailing cells off, as the details page does.
        if header is None or len(row) <= max(2, cols["text"]) or len(row) > len(header):
            # Lines around the tables: the kernel's name, the file a CUDA view shows.
            cells = [c.strip() for c in row if c.strip()]
            if cells and cells[0].lower() in ("kernel name", "kernel"):
                kernel = cells[-1]
                kernels.add(kernel)
            elif cells and len(cells) <= 2 and SOURCE_FILE.search(cells[-1]):
                where, cuda_ordinal = cells[-1], 0
            continue

        def get(role):
            i = cols.get(role)
            return row[i].strip() if i is not None and i < len(row) else ""

        executed, stalls = number(get("executed")) or 0.0, number(get("stalls")) or 0.0
        address, text_ = get("address"), row[cols["text"]].rstrip()
        if "file" in cols and get("file"):
            where = get("file")
        if address and SASS_ADDRESS.match(address):
            sass_rows += 1
            entry = sass[(kernel, address, text_.strip())]
            entry[0] += executed
            entry[1] += stalls
            entry[2] = entry[2] or current_line
            continue
        cuda_ordinal += 1
        line = get("line") or f"~{cuda_ordinal}"
        current_line = f"{where.rsplit('/', 1)[-1] or '?'}:{line}"
        line_text[current_line] = text_.strip()
        entry = cuda_lines[(where, line)]
        entry[0] += executed
        entry[1] += stalls
        entry[2] = text_.strip()
    if header is None:
        print(f"ncu_summary.py --source: no source table in {path} (no header with a Source "
              f"column and Instructions Executed or Warp Stall Sampling); its first lines:")
        for line in text.splitlines()[:6]:
            print(f"  {line[:300]}")
        return 0
    named = {role: header[i] for role, i in cols.items()}
    print(f"source view: {len(kernels) or '?'} kernel(s), {len(cuda_lines)} CUDA lines, "
          f"{sass_rows} SASS rows; columns: {named}")
    for role in ("executed", "stalls"):
        if role not in cols:
            print(f"  no {SOURCE_COLUMNS[role][0]!r} column; the header: {header}")
    if not any(e[0] or e[1] for e in cuda_lines.values()) and sass:
        # CUDA lines without counts of their own (or none): their SASS instructions' sums.
        cuda_lines = defaultdict(lambda: [0.0, 0.0, ""])
        for executed, stalls, line in sass.values():
            if line:
                entry = cuda_lines[(line, "")]
                entry[0] += executed
                entry[1] += stalls
                entry[2] = line_text[line]

    def ranked(table, index, title, label):
        total = sum(e[index] for e in table.values())
        if not total:
            return
        print(f"{title} (of {total:,.0f}):")
        for key, e in sorted(table.items(), key=lambda kv: -kv[1][index])[:top]:
            if e[index] <= 0:
                break
            share = 100 * e[index] / total
            print(f"  {share:5.1f}% {e[index]:>14,.0f}  {one_line(label(key, e), 150)}")

    def cuda_label(key, e):
        where_, line = key
        at = f"{where_.rsplit('/', 1)[-1] or '?'}:{line}" if line else where_
        return f"{at}  {e[2]}" if e[2] else at

    def sass_label(key, e):
        return f"{key[1][-5:]} {key[2]}" + (f"  [{e[2]}]" if e[2] else "")

    ranked(cuda_lines, 0, "CUDA lines by instructions executed", cuda_label)
    ranked(cuda_lines, 1, "CUDA lines by warp stall samples", cuda_label)
    ranked(sass, 0, "SASS instructions by instructions executed", sass_label)
    ranked(sass, 1, "SASS instructions by warp stall samples", sass_label)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--largest", metavar="REGEX")
    parser.add_argument("--per-kernel", action="store_true")
    parser.add_argument("--source", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.source:
        try:
            return source(args.csv, args.top)
        except Exception as e:  # a layout not foreseen: say so, the summary goes on
            print(f"ncu_summary.py --source: could not read {args.csv}: {e!r}")
            return 0
    launches = read_launches(args.csv)
    rc = 0
    if args.largest:
        rc |= largest(launches, args.largest)
    if args.per_kernel:
        rc |= per_kernel(launches)
    return rc


if __name__ == "__main__":
    sys.exit(main())
