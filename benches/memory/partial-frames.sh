#!/usr/bin/env bash
# benches/memory/partial-frames.sh: a well-behaved client's latency, and the bookie's memory,
# while 300 peers each hold 4 MiB of an unfinished 5 MB frame (issue #10, load (b)).
#
#   cargo build --release -p bookie -p bkbench
#   benches/memory/partial-frames.sh [rounds]
#
# Starts a standalone release bookie (64 MiB write cache, 16 MiB read cache) on port 3197 with
# its data in a fresh temporary directory, then alternates, `rounds` times (default 2):
# write-1k-rate (benches/jobs/standard.fio, 12 s) alone, and write-1k-rate while
# partial_frames.py holds the 300 connections. Prints p50/p99 of each run and the bookie's
# VmRSS/VmHWM (from /proc) while the peers are held; results go in docs/benchmarks.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BIN:-$root/target/release}
rounds=${1:-2}
port=3197
data=$(mktemp -d /tmp/bk-partial-frames.XXXXXX)
"$bin/bookie" --standalone --data-dir "$data" --port $port \
    --set dbStorage_writeCacheMaxSizeMb=64 --set dbStorage_readAheadCacheMaxSizeMb=16 \
    >"$data/bookie.log" 2>&1 &
bookie=$!
trap 'kill $bookie 2>/dev/null; wait $bookie 2>/dev/null; rm -rf "$data"' EXIT
sleep 3
summary() {
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w = j.get("write") or j
p = (w.get("lat_ns") or {}).get("percentile", {})
print(f"{sys.argv[2]:>9}: {w[\"iops\"]:.0f} adds/s, p50 {int(p[\"50.000000\"])/1e6:.2f} ms, p99 {int(p[\"99.000000\"])/1e6:.2f} ms, errors {w.get(\"errors\")}")
' "$1" "$2"
}
for round in $(seq 1 "$rounds"); do
    for mode in unloaded loaded; do
        peers=""
        if [ $mode = loaded ]; then
            python3 "$here/partial_frames.py" $port $bookie 300 4 24 >"$data/peers.txt" &
            peers=$!
            sleep 6
        fi
        "$bin/bkbench" "$root/benches/jobs/standard.fio" --section=write-1k-rate \
            --bookie=127.0.0.1:$port --runtime=12s --ramp_time=1s --progress=0 \
            --output-format=json >"$data/$mode.json"
        summary "$data/$mode.json" "$mode"
        if [ -n "$peers" ]; then wait $peers; sed 's/^/           /' "$data/peers.txt"; fi
    done
done
