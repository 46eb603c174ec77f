#!/usr/bin/env bash
# Runs fio for the shapes journal_bench measures, on the same directory in the same
# run, then journal_bench itself (io_uring and syscall backends), printing both.
# Usage: benches/journal-vs-fio.sh DIR [SCALE]   (installs fio with apt-get if missing)
# Keep SCALE small (default 0.5) on shared machines; run on a quiet machine.
#
# fio shapes (ioengine=io_uring, direct=1, pre-written file, as the journal's segments):
#  - 1k write + fdatasync, iodepth 1: what one committer gets with no batching at all
#    (compare with (a): appends/s = this x appends per fdatasync);
#  - 64k write + fdatasync: about the size of one (a) group;
#  - 5m write + fdatasync: compare with (b) MB/s;
#  - 1m sequential read: compare with (d) replay MB/s.
set -euo pipefail
dir=${1:?usage: $0 DIR [SCALE]}
scale=${2:-0.5}
cd "$(dirname "$0")/.."
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
mkdir -p "$dir/fio"
secs=$(awk -v s="$scale" 'BEGIN { t = 3 * s; printf "%d", t < 1 ? 1 : t }')
common=(--directory="$dir/fio" --ioengine=io_uring --direct=1 --group_reporting --output-format=json)
run() {  # name, fio args...; prints bandwidth, IOPS and latency p50/p99
    local name=$1; shift
    fio --name="$name" "${common[@]}" "$@" | python3 -c '
import json, sys
name = sys.argv[1]
job = json.load(sys.stdin)["jobs"][0]
for d in ("read", "write"):
    j = job[d]
    if j["io_bytes"] == 0:
        continue
    p = j.get("clat_ns", {}).get("percentile", {})
    s = job.get("sync", {}).get("lat_ns", {}).get("percentile", {})
    print("fio %-16s %-5s %8.1f MB/s %8.0f IOPS  write p50 %6.0f us p99 %6.0f us  sync p50 %6.0f us p99 %6.0f us" % (
        name, d, j["bw_bytes"] / 1e6, j["iops"],
        p.get("50.000000", 0) / 1e3, p.get("99.000000", 0) / 1e3,
        s.get("50.000000", 0) / 1e3, s.get("99.000000", 0) / 1e3))
' "$name"
}
# Pre-write the file once (the journal zero-fills its segments), then overwrite it.
fio --name=prewrite "${common[@]}" --rw=write --bs=1m --size=256m --filename=jfile >/dev/null
ow=(--filename=jfile --size=256m --rw=write --iodepth=1 --fdatasync=1 --runtime="$secs" --time_based)
run write-1k-sync  "${ow[@]}" --bs=1k
run write-64k-sync "${ow[@]}" --bs=64k
run write-5m-sync  "${ow[@]}" --bs=5m
run seqread-1m --filename=jfile --size=256m --rw=read --bs=1m --iodepth=4
rm -rf "$dir/fio"
cargo build --release -q -p bkbench --bin journal_bench
target=${CARGO_TARGET_DIR:-target}
"$target/release/journal_bench" --dir "$dir" --scale "$scale"
