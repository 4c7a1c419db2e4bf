"""Where a run's GPU time goes, kernel by kernel, from Nsight Compute.

  ncu --metrics gpu__time_duration.sum --csv --print-units base \
      kiln-run MODEL.so ... > run.csv
  python3 bench/kernel_times.py run.csv [--top N]

Sums each kernel name's durations over the run and prints the names by
their share of the total, largest first: a Markdown table for the note.
The columns are found by their header names, which have kept their names
across Nsight Compute versions while others came and went.
"""
import argparse
import csv
import sys

# Nsight Compute's time units, in microseconds.
UNITS = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}


def kernel_times(lines):
    """{kernel name: (launches, total µs)} over the CSV rows of `lines`
    whose metric is gpu__time_duration.sum; the lines before the header
    (the profiled program's own output) are skipped."""
    lines = list(lines)
    start = next((i for i, line in enumerate(lines)
                  if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no Nsight Compute CSV header (\"ID\",...) found")
    totals = {}
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = row.get("Metric Unit", "")
        if unit not in UNITS:
            raise ValueError(f"unknown time unit {unit!r}")
        value = float(row["Metric Value"].replace(",", "")) * UNITS[unit]
        launches, total = totals.get(row["Kernel Name"], (0, 0.0))
        totals[row["Kernel Name"]] = (launches + 1, total + value)
    if not totals:
        raise ValueError("no gpu__time_duration.sum rows (were the run's "
                         "kernels profiled at all?)")
    return totals


def table(totals, top):
    """The `top` kernels by total time, as Markdown, with a last row for
    the rest and the run's sum."""
    whole = sum(t for _, t in totals.values())
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][1])
    lines = ["| kernel | launches | µs | share |", "|---|---|---|---|"]
    for name, (launches, total) in ranked[:top]:
        share = total / whole if whole else 0.0
        lines.append(f"| {name[:80]} | {launches} | {total:.1f} | "
                     f"{share:.1%} |")
    rest = ranked[top:]
    if rest:
        launches = sum(n for _, (n, _) in rest)
        total = sum(t for _, (_, t) in rest)
        lines.append(f"| {len(rest)} other kernels | {launches} | "
                     f"{total:.1f} | {total / whole:.1%} |")
    lines.append(f"| all | {sum(n for n, _ in totals.values())} | "
                 f"{whole:.1f} | 100% |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", help="ncu --csv output")
    parser.add_argument("--top", type=int, default=20,
                        help="kernels listed by name (default 20)")
    args = parser.parse_args()
    with open(args.csv, errors="replace") as f:
        try:
            totals = kernel_times(f.read().splitlines())
        except ValueError as e:
            print(f"kernel_times: {args.csv}: {e}", file=sys.stderr)
            return 1
    print(table(totals, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
