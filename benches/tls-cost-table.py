#!/usr/bin/env python3
"""benches/tls-cost-table.py RESULTS: the "TLS cost" table of benches/tls-cost.sh.

Input, in RESULTS: r<round>-<job>-<side>-<mode>.json (bkbench JSON reports; side ours|java,
mode plain|tls) and ticks.tsv (round, job, side, mode, bookie CPU ticks over the measured run).
Output (stdout, Markdown): per job and bookie, plain and TLS medians with [min-max] over the
rounds of throughput, p50/p99 latency and bookie CPU per acknowledged add, then the TLS cost:
(plain - tls) / plain of the throughput medians, and tls / plain of the CPU-per-add medians.
"""
import glob
import json
import os
import re
import statistics
import sys

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def main(results):
    ticks = {}
    with open(os.path.join(results, "ticks.tsv")) as f:
        for line in f:
            rnd, job, side, mode, t = line.split()
            ticks[(rnd, job, side, mode)] = int(t)
    runs = {}  # (job, side, mode) -> list of per-round metrics
    jobs = []
    for path in sorted(glob.glob(os.path.join(results, "r*-*.json"))):
        m = re.match(r"r(\d+)-(.+)-(ours|java)-(plain|tls)\.json$", os.path.basename(path))
        if not m:
            continue
        rnd, job, side, mode = m.groups()
        if job not in jobs:
            jobs.append(job)
        with open(path) as f:
            w = json.load(f)["jobs"][0]["write"]
        acked = w["total_ios"] - w["total_errors"]
        pct = w["lat_ns"]["percentile"]
        runs.setdefault((job, side, mode), []).append(
            {
                "adds/s": w["iops"],
                "MiB/s": w["bw_bytes"] / 2**20,
                "p50 ms": pct["50.000000"] / 1e6,
                "p99 ms": pct["99.000000"] / 1e6,
                "CPU us/add": ticks[(rnd, job, side, mode)] * TICK_MS * 1000 / max(acked, 1),
                "errors": w["total_errors"],
            }
        )

    def cell(vals, fmt):
        med = statistics.median(vals)
        return f"{fmt(med)} [{fmt(min(vals))}-{fmt(max(vals))}]"

    def num(x):
        return f"{x:.0f}" if x >= 100 else f"{x:.3g}"

    print("| job | bookie | metric | plain: median [range] | TLS: median [range] | TLS cost |")
    print("|---|---|---|---:|---:|---:|")
    summary = []
    for job in jobs:
        for side in ("ours", "java"):
            plain = runs.get((job, side, "plain"), [])
            tls = runs.get((job, side, "tls"), [])
            if not plain or not tls:
                continue
            tput = "MiB/s" if job == "write-5m" else "adds/s"
            for metric in (tput, "p50 ms", "p99 ms", "CPU us/add"):
                p = [r[metric] for r in plain]
                t = [r[metric] for r in tls]
                mp, mt = statistics.median(p), statistics.median(t)
                if metric == tput:
                    cost = f"{(mp - mt) / mp * 100:+.1f} % slower"
                    summary.append((job, side, "throughput", (mp - mt) / mp))
                elif metric == "CPU us/add":
                    cost = f"x{mt / mp:.2f}"
                    summary.append((job, side, "cpu", mt / mp))
                else:
                    cost = f"x{mt / mp:.2f}"
                print(f"| {job} | {side} | {metric} | {cell(p, num)} | {cell(t, num)} | {cost} |")
            errs = sum(r["errors"] for r in plain + tls)
            if errs:
                print(f"| {job} | {side} | errors | | | {errs} |")
    print()
    print("| job | throughput lost to TLS: ours | java | CPU per add TLS/plain: ours | java |")
    print("|---|---:|---:|---:|---:|")
    for job in jobs:
        s = {(side, kind): v for (j, side, kind, v) in summary if j == job}
        if len(s) < 4:
            continue
        print(
            f"| {job} | {s[('ours', 'throughput')] * 100:.1f} % | {s[('java', 'throughput')] * 100:.1f} % "
            f"| x{s[('ours', 'cpu')]:.2f} | x{s[('java', 'cpu')]:.2f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
