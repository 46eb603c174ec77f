#!/usr/bin/env bash
# benches/pulsar-compare.sh: issue #16's user-level benchmark. A stock Pulsar 4.0.7 broker over
# three bookie-rs bookies and over three stock Java bookies (BookKeeper 4.17.2, the broker's own),
# alternating, on the same disk, loaded by the stock Java client (tests/pulsar PublishLoad and
# FileRoundTrip; pulsar-perf's jar is not served here). Results: docs/benchmarks.md ("Pulsar over
# bookie-rs and over Java bookies"). Not in CI (minutes per round, GBs of disk).
#
#   cargo build --release -p bookie
#   benches/pulsar-compare.sh                      # 3 rounds, each: rust then java
#   ROUNDS=1 GB_BYTES=268435456 benches/pulsar-compare.sh
#
# Each round, for each implementation, on a fresh cluster (tests/pulsar/launcher.sh: ZooKeeper,
# PulsarClusterMetadataSetup, 3 bookies with DbLedgerStorage's keys and 256 MiB write and
# read-ahead caches, one broker, v2 wire as brokers use, ensemble/write/ack 3/3/2, a 16 MiB
# broker cache so reads come from the bookies):
#   1. 1 KiB messages at RATE_1K msg/s (default 2000) for LOAD_SECONDS (default 20): publish latency
#      p50 / p99 / p99.9 (open loop, from when each message was due);
#   2. 5 MiB messages (chunked: 2 chunks each, stock 5 MiB maxMessageSize) at RATE_5M msg/s
#      (default 4) for LOAD_SECONDS: the same latencies;
#   3. max publish throughput of 1 KiB messages, MAX_INFLIGHT (default 1000) in flight, LOAD_SECONDS;
#   4. consumer catch-up: the topic of 3 unloaded, consumed from earliest by a new subscription;
#   5. one GB_BYTES (default 1 GiB) file as one chunked message: time to publish, time to
#      consume (FileRoundTrip, topic unloaded first), SHA-256 equal;
#   and each bookie's peak RSS (VmHWM) over the round.
# Then a table of medians (with ranges) per implementation and the ratio ours / Java.
# Env: BOOKIE_BIN (default target/release/bookie), OUT_DIR (default a new /tmp/bk-pulsar-compare.X),
# ROUNDS, LOAD_SECONDS, RATE_1K, RATE_5M, MAX_INFLIGHT, GB_BYTES (0 skips step 5), IMPLS (default
# "rust java").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/bk-pulsar-compare.XXXXXX)}
mkdir -p "$OUT_DIR"
ROUNDS=${ROUNDS:-3}
# Not SECONDS: bash keeps that one as the seconds since the shell started (0 here), which made
# every load run for 0 s and report nothing.
SECONDS_EACH=${LOAD_SECONDS:-20}
RATE_1K=${RATE_1K:-2000}
RATE_5M=${RATE_5M:-4}
MAX_INFLIGHT=${MAX_INFLIGHT:-1000}
GB_BYTES=${GB_BYTES:-1073741824}
IMPLS=${IMPLS:-rust java}
export BOOKIE_BIN=${BOOKIE_BIN:-$root/target/release/bookie}
# The Java bookies as benches/compare.sh runs one: 1 GiB heap, 1 GiB direct memory (its 256 MiB
# write and read-ahead caches need it), the JVM's own GC and JIT (the launcher's test defaults
# stop the JIT at C1 for a quick start).
export PL_JAVA_BOOKIE_HEAP=${PL_JAVA_BOOKIE_HEAP:-1g} PL_JAVA_BOOKIE_DIRECT=${PL_JAVA_BOOKIE_DIRECT:-1g}
export PL_JAVA_BOOKIE_JVM=${PL_JAVA_BOOKIE_JVM-}
[ -x "$BOOKIE_BIN" ] || { echo "pulsar-compare: no $BOOKIE_BIN (cargo build --release -p bookie)" >&2; exit 2; }
results="$OUT_DIR/results.tsv"
: >"$results"
if [ "$GB_BYTES" != 0 ]; then
    head -c "$GB_BYTES" /dev/urandom >"$OUT_DIR/big.bin"
fi

# one_round ROUND IMPL: a cluster, the five loads, the peaks; rows "round impl metric value".
one_round() {
    local round=$1 impl=$2 line
    (
        PL_DIR="$OUT_DIR/r$round-$impl"
        # shellcheck source=../tests/pulsar/launcher.sh
        . "$root/tests/pulsar/launcher.sh"
        trap pl_stop_all EXIT
        pl_init >/dev/null
        keys=(ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
            dbStorage_writeCacheMaxSizeMb=256 dbStorage_readAheadCacheMaxSizeMb=256)
        pl_zk_start
        pl_metadata_setup >/dev/null
        for i in 0 1 2; do pl_any_bookie_start "$impl" "$i" "${keys[@]}"; done
        pl_bookies_registered 3
        pl_broker_start bookkeeperUseV2WireProtocol=true managedLedgerCacheSizeMB=16 >/dev/null
        row() { echo "$round $impl $1 $2" >>"$results"; }
        load() { PL_JAVA_OPTS="-Xmx2g -XX:MaxDirectMemorySize=2g" pl_java bookiers.pulsar.PublishLoad \
            "$PL_SERVICE_URL" "$PL_ADMIN_URL" "$@" 2>>"$PL_DIR/load.log"; }
        # "... = <msg/s> msg/s <MB/s> MB/s; latency ms p50 <a> p99 <b> p99.9 <c> max <d>"
        fields() { sed -E 's/.* = ([0-9.]+) msg\/s ([0-9.]+) MB\/s; latency ms p50 ([0-9.]+) p99 ([0-9.]+) p99\.9 ([0-9.]+) max ([0-9.]+).*/\1 \2 \3 \4 \5 \6/'; }
        # A load that acknowledged nothing measured nothing: stop rather than report zeros.
        acked() {
            echo "$1" | grep -qE ' [1-9][0-9]* acked ' \
                || { echo "  [$impl r$round] nothing acknowledged: $1 (log: $PL_DIR/load.log)" >&2; exit 1; }
        }
        line=$(load persistent://public/default/rate-1k rate 1024 "$RATE_1K" "$SECONDS_EACH")
        echo "  [$impl r$round] $line"
        acked "$line"
        read -r ms mbs p50 p99 p999 _ <<<"$(echo "$line" | fields)"
        row rate1k_msgs "$ms"; row rate1k_p50 "$p50"; row rate1k_p99 "$p99"; row rate1k_p999 "$p999"
        line=$(load persistent://public/default/rate-5m rate 5242880 "$RATE_5M" "$SECONDS_EACH")
        echo "  [$impl r$round] $line"
        acked "$line"
        read -r ms mbs p50 p99 p999 _ <<<"$(echo "$line" | fields)"
        row rate5m_msgs "$ms"; row rate5m_p50 "$p50"; row rate5m_p99 "$p99"; row rate5m_p999 "$p999"
        line=$(load persistent://public/default/max-1k max 1024 "$MAX_INFLIGHT" "$SECONDS_EACH")
        echo "  [$impl r$round] $line"
        acked "$line"
        read -r ms mbs p50 p99 p999 _ <<<"$(echo "$line" | fields)"
        row max1k_msgs "$ms"; row max1k_p99 "$p99"
        line=$(load persistent://public/default/max-1k catchup)
        echo "  [$impl r$round] $line"
        row catchup_msgs "$(echo "$line" | sed -E 's/.* = ([0-9.]+) msg\/s.*/\1/')"
        if [ "$GB_BYTES" != 0 ]; then
            line=$(PL_JAVA_OPTS="-Xms512m -Xmx$((GB_BYTES / 1048576 * 3 + 1024))m -XX:MaxDirectMemorySize=$((GB_BYTES / 1048576 * 2 + 1024))m" \
                pl_java bookiers.pulsar.FileRoundTrip "$PL_SERVICE_URL" "$PL_ADMIN_URL" \
                persistent://public/default/big "$OUT_DIR/big.bin" 2>>"$PL_DIR/load.log")
            echo "$line" | sed "s/^/  [$impl r$round] /"
            echo "$line" | grep -q ' equal$' || { echo "  [$impl r$round] SHA-256 differs" >&2; exit 1; }
            row gb_publish_s "$(echo "$line" | sed -nE 's/^published [0-9]+ in ([0-9]+) ms.*/\1/p' | awk '{print $1/1000}')"
            row gb_consume_s "$(echo "$line" | sed -nE 's/^consumed [0-9]+ in ([0-9]+) ms.*/\1/p' | awk '{print $1/1000}')"
        fi
        for i in 0 1 2; do
            row peak_rss_mib "$(awk '$1 == "VmHWM:" { printf "%.0f", $2 / 1024 }' "/proc/${PL_BOOKIE_PID[$i]}/status")"
        done
    )
}

for ((r = 1; r <= ROUNDS; r++)); do
    for impl in $IMPLS; do
        echo "== round $r: $impl"
        # A failure ends the script (set -e); PL_KEEP=1 keeps that round's logs.
        one_round "$r" "$impl"
    done
done

python3 - "$results" <<'EOF' | tee "$OUT_DIR/table.txt"
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, impl, metric, value = line.split()
    rows[(metric, impl)].append(float(value))
metrics = [
    ("rate1k_msgs", "1 KiB at fixed rate: acknowledged msg/s"), ("rate1k_p50", "  publish p50 ms"),
    ("rate1k_p99", "  publish p99 ms"), ("rate1k_p999", "  publish p99.9 ms"),
    ("rate5m_msgs", "5 MiB chunked at fixed rate: msg/s"), ("rate5m_p50", "  publish p50 ms"),
    ("rate5m_p99", "  publish p99 ms"), ("rate5m_p999", "  publish p99.9 ms"),
    ("max1k_msgs", "max publish, 1 KiB: msg/s"), ("max1k_p99", "  its p99 ms"),
    ("catchup_msgs", "consumer catch-up from the bookies: msg/s"),
    ("gb_publish_s", "1 GiB chunked message: publish s"), ("gb_consume_s", "  consume s"),
    ("peak_rss_mib", "bookie peak RSS MiB (each of 3, all rounds)"),
]
print("| measure | bookie-rs median (range) | Java median (range) | ours / Java |")
print("|---|---|---|---|")
def cell(v):
    return f"{statistics.median(v):,.2f} ({min(v):,.2f}-{max(v):,.2f}, n={len(v)})" if v else "-"
for key, label in metrics:
    ours, java = rows.get((key, "rust"), []), rows.get((key, "java"), [])
    ratio = f"{statistics.median(ours) / statistics.median(java):.2f}" if ours and java and statistics.median(java) else "-"
    print(f"| {label} | {cell(ours)} | {cell(java)} | {ratio} |")
EOF
echo "results: $OUT_DIR (results.tsv, table.txt, per-round logs when kept)"
