#!/usr/bin/env bash
# benches/memory/memory-bound.sh: the bookie's memory against its stated bound
# (docs/memory.md §1) under the loads of issue #10 point 5. For each load it starts a fresh
# standalone release bookie, reads the bound from its `bookie_rs_memory_bound_bytes` metric,
# runs the load, then prints the peak VmHWM against the bound and VmRSS over the 60 s after
# the load (10 s, 30 s, 60 s). Results go in docs/benchmarks.md ("Memory bound").
#
#   cargo build --release -p bookie -p bkbench
#   benches/memory/memory-bound.sh [idle|storm|partial|never-reads|all] ...
#
# Loads:
#   idle         the fixed overhead: RSS of a bookie that served nothing, and after 1,000 small
#                adds and reads (docs/memory.md §3);
#   storm        (a) 5 MiB adds, 16 connections x 128 in flight, 60 s; 256 MiB write cache,
#                64 MiB read cache (the issue's measurement);
#   partial      (b) 300 peers each holding 4 MiB of an unfinished 5 MB frame while a good
#                client runs write-1k-rate (p99 alone vs loaded); 64 + 16 MiB caches;
#   never-reads  (c) 3 clients that add 64 KiB entries and read them back forever without
#                reading their sockets, while a good client runs write-1k-rate; 64 + 16 MiB.
# Env: BIN (default target/release), IDLE_S (default 60), STORM_S (default 60), EXTRA (more
# --set options for every bookie, e.g. to compare allocator settings).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BIN:-$root/target/release}
idle_s=${IDLE_S:-60}
storm_s=${STORM_S:-60}
port=3198
mport=8198
bookie=""
data=""
cleanup() {
    if [ -n "$bookie" ]; then kill "$bookie" 2>/dev/null || true; wait "$bookie" 2>/dev/null || true; fi
    if [ -n "$data" ]; then rm -rf "$data"; fi
    bookie=""; data=""
}
trap cleanup EXIT

kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$bookie/status"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }

# start WRITE_MB READ_MB: a fresh bookie; sets $bookie, $data, $bound (bytes).
start() {
    data=$(mktemp -d /tmp/bk-memory-bound.XXXXXX)
    # shellcheck disable=SC2086
    "$bin/bookie" --standalone --data-dir "$data" --port $port --metrics-port $mport \
        --set dbStorage_writeCacheMaxSizeMb="$1" --set dbStorage_readAheadCacheMaxSizeMb="$2" \
        ${EXTRA:-} >"$data/bookie.log" 2>&1 &
    bookie=$!
    for _ in $(seq 1 100); do
        bound=$(curl -sf "http://127.0.0.1:$mport/metrics" 2>/dev/null \
            | awk '$1 == "bookie_rs_memory_bound_bytes" { printf "%.0f", $2 }') || true
        [ -n "${bound:-}" ] && break
        sleep 0.1
    done
    [ -n "${bound:-}" ] || { echo "bookie did not come up"; cat "$data/bookie.log"; exit 1; }
    curl -sf "http://127.0.0.1:$mport/metrics" | grep '^bookie_rs_memory_part_bound_bytes' \
        | awk '{ printf "  %s %.0f MiB\n", $1, $2 / 1048576 }'
}

# report NAME: peak vs bound now, then RSS over the idle minute.
report() {
    local hwm rss10 rss30 rss60
    hwm=$(kib VmHWM)
    sleep 10; rss10=$(kib VmRSS)
    sleep 20; rss30=$(kib VmRSS)
    sleep $((idle_s - 30)); rss60=$(kib VmRSS)
    echo "$1: bound $(mib "$bound") MiB, peak VmHWM $((hwm / 1024)) MiB" \
        "($(awk -v h="$hwm" -v b="$bound" 'BEGIN { printf "%.0f", 100 * h * 1024 / b }') % of the bound);" \
        "VmRSS after the load: $((rss10 / 1024)) MiB at 10 s, $((rss30 / 1024)) MiB at 30 s," \
        "$((rss60 / 1024)) MiB at ${idle_s} s"
    curl -sf "http://127.0.0.1:$mport/metrics" | grep -E '^bookie_rs_memory_part_used_bytes' \
        | awk '{ printf "  idle: %s %.1f MiB\n", $1, $2 / 1048576 }'
}

p99() {
    python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w = j.get("write") or j
p = (w.get("lat_ns") or {}).get("percentile", {})
p50, p99 = int(p["50.000000"]) / 1e6, int(p["99.000000"]) / 1e6
print(f"  {sys.argv[2]:>8}: {w['iops']:.0f} adds/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms, errors {w.get('errors')}")
PY
}

good_client() {
    "$bin/bkbench" "$root/benches/jobs/standard.fio" --section=write-1k-rate \
        --bookie=127.0.0.1:$port --runtime=12s --ramp_time=1s --progress=0 \
        --output-format=json >"$data/$1.json"
    p99 "$data/$1.json" "$1"
}

load_idle() {
    echo "== idle: the fixed overhead (no caches in use)"
    start 16 16
    sleep 2
    echo "  started: VmRSS $(($(kib VmRSS) / 1024)) MiB, VmHWM $(($(kib VmHWM) / 1024)) MiB," \
        "threads $(awk '$1 == "Threads:" { print $2 }' "/proc/$bookie/status")"
    "$bin/bkbench" --bookie=127.0.0.1:$port --name=small --rw=mixed --rwmixread=50 --bs=1k \
        --iodepth=16 --number_ios=1000 --progress=0 >/dev/null
    sleep 2
    echo "  after 1,000 small adds and reads: VmRSS $(($(kib VmRSS) / 1024)) MiB," \
        "VmHWM $(($(kib VmHWM) / 1024)) MiB"
    cleanup
}

load_storm() {
    echo "== (a) 5 MiB write storm: 16 connections x 128 in flight, ${storm_s} s"
    start 256 64
    "$bin/bkbench" --bookie=127.0.0.1:$port --name=storm --rw=write --bs=5m --iodepth=2048 \
        --connections=16 --ledgers=16 --runtime="${storm_s}s" --timeout=120s --progress=0 \
        >"$data/storm.txt" || true
    grep -E "write:|iops|bw=|errors" "$data/storm.txt" | head -4 | sed 's/^/  /'
    report "(a) storm"
    cleanup
}

load_partial() {
    echo "== (b) 300 peers holding 4 MiB partial frames, good client write-1k-rate"
    start 64 16
    good_client alone
    python3 "$here/partial_frames.py" $port "$bookie" 300 4 24 >"$data/peers.txt" &
    local peers=$!
    sleep 6
    good_client loaded
    wait $peers
    sed 's/^/  /' "$data/peers.txt"
    report "(b) partial frames"
    cleanup
}

load_never_reads() {
    echo "== (c) 3 clients that never read their responses, good client write-1k-rate"
    start 64 16
    good_client alone
    python3 "$here/never_reads.py" $port "$bookie" 3 64 256 24 >"$data/never.txt" &
    local peers=$!
    sleep 6
    curl -sf "http://127.0.0.1:$mport/metrics" | grep -E '^bookie_rs_memory_part_used_bytes' \
        | awk '{ printf "  while they send: %s %.1f MiB\n", $1, $2 / 1048576 }'
    good_client loaded
    wait $peers
    sed 's/^/  /' "$data/never.txt"
    report "(c) never reads"
    cleanup
}

loads=("$@")
[ ${#loads[@]} -eq 0 ] && loads=(all)
for l in "${loads[@]}"; do
    case $l in
        idle) load_idle ;;
        storm) load_storm ;;
        partial) load_partial ;;
        never-reads) load_never_reads ;;
        all) load_idle; load_storm; load_partial; load_never_reads ;;
        *) echo "unknown load $l"; exit 2 ;;
    esac
done
