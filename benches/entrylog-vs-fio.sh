#!/usr/bin/env bash
# Runs fio for the shapes entrylog_bench measures, on the same directory in the same
# run, then entrylog_bench itself, so the two can be compared line by line.
# Usage: benches/entrylog-vs-fio.sh DIR [SCALE [entrylog_bench options...]]
#   (installs fio with apt-get if missing)
# Keep SCALE small (default 0.5) on shared machines; run on a quiet machine.
set -euo pipefail
dir=${1:?usage: $0 DIR [SCALE]}
scale=${2:-0.5}
cd "$(dirname "$0")/.."
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
mkdir -p "$dir/fio"
mb() { awk -v s="$scale" -v m="$1" 'BEGIN { printf "%dm", m * s < 16 ? 16 : m * s }'; }
common=(--directory="$dir/fio" --ioengine=io_uring --direct=1 --group_reporting --output-format=json)
run() {  # name, fio args...; prints bandwidth, IOPS and completion-latency p50/p99
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
    print("fio %-18s %-5s %8.1f MB/s %8.0f IOPS  p50 %6.0f us  p99 %6.0f us" % (
        name, d, j["bw_bytes"] / 1e6, j["iops"],
        p.get("50.000000", 0) / 1e3, p.get("99.000000", 0) / 1e3))
' "$name"
}
sz=$(mb 1024)
# Flush shapes: sequential writes of a segment-sized file, one fdatasync at the end.
run seqwrite-64k  --rw=write --bs=64k --size="$sz" --iodepth=4 --end_fsync=1
run seqwrite-1m   --rw=write --bs=1m  --size="$sz" --iodepth=4 --end_fsync=1
run seqwrite-5m   --rw=write --bs=5m  --size="$sz" --iodepth=1 --end_fsync=1
# Cold random 4 KiB reads at queue depth 32.
rsz=$(mb 64)
run randread-4k-qd32 --rw=randread --bs=4k --size="$rsz" --iodepth=32 --runtime=3 --time_based
# A 4,000-byte entry mostly straddles two 4 KiB blocks: an 8 KiB read (the bench reads both sizes).
run randread-8k-qd32 --rw=randread --bs=8k --size="$rsz" --iodepth=32 --runtime=3 --time_based
# Sequential catch-up reads (read-ahead makes entrylog's reads larger than one entry).
run seqread-1k   --rw=read --bs=1k  --size="$rsz" --iodepth=1 --direct=0
run seqread-64k  --rw=read --bs=64k --size="$rsz" --iodepth=1
run seqread-1m   --rw=read --bs=1m  --size="$rsz" --iodepth=1
rm -rf "$dir/fio"
cargo build --release -q -p bkbench --bin entrylog_bench
target=${CARGO_TARGET_DIR:-target}
"$target/release/entrylog_bench" --dir "$dir" --scale "$scale" "${@:3}"
