#!/usr/bin/env bash
# benches/memory/pulsar-readback.sh: load (d) of issue #10 point 5: a stock Pulsar 4.0.7 broker
# writes ONE chunked message of SIZE bytes to three bookie-rs bookies and reads it back from them,
# each bookie with a 64 MiB write cache and a 16 MiB read cache; prints each bookie's peak VmHWM
# against its stated bound (`bookie_rs_memory_bound_bytes`, docs/memory.md §1) and its VmRSS over
# the 60 s after the load, in the format of memory-bound.sh. Results: docs/benchmarks.md
# ("Memory bound"). Not in CI (minutes, GBs of disk).
#
#   cargo build --release -p bookie
#   benches/memory/pulsar-readback.sh [SIZE_BYTES]      # default 1 GiB (1073741824)
#
# The cluster is tests/pulsar/launcher.sh (ZooKeeper, PulsarClusterMetadataSetup, 3 bookies,
# one broker, ensemble/write/ack 3/3/2); the producer/consumer is tests/pulsar ChunkedRoundTrip
# (stock Java client, enableChunking, batching off, 5 MiB chunks = stock maxMessageSize), which
# unloads the topic before consuming so the broker's cache is cold. Env: IDLE_S (default 60),
# PL_KEEP=1 keeps the logs, BOOKIE_BIN, WRITE_MB / READ_MB (default 64 / 16).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
size=${1:-1073741824}
idle_s=${IDLE_S:-60}
write_mb=${WRITE_MB:-64}
read_mb=${READ_MB:-16}
BOOKIE_BIN=${BOOKIE_BIN:-$root/target/release/bookie}
# shellcheck source=../../tests/pulsar/launcher.sh
. "$root/tests/pulsar/launcher.sh"
sampler=""
cleanup() {
    if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; fi
    pl_stop_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }
metric() { curl -sf "$1" | awk -v n="$2" '$1 == n { printf "%.0f", $2 }'; }

pl_init
echo "== (d) stock Pulsar broker, one $((size / 1048576)) MiB chunked message written and read back;" \
    "3 bookies, $write_mb + $read_mb MiB caches; work dir $PL_DIR"
pl_zk_start
pl_metadata_setup
for i in 0 1 2; do
    pl_bookie_start $i ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage \
        dbStorage_writeCacheMaxSizeMb="$write_mb" dbStorage_readAheadCacheMaxSizeMb="$read_mb"
done
pl_bookies_registered 3
declare -a bound
for i in 0 1 2; do
    bound[$i]=$(metric "${PL_BOOKIE_METRICS[$i]}" bookie_rs_memory_bound_bytes)
    [ -n "${bound[$i]}" ] || { echo "bookie $i exports no bookie_rs_memory_bound_bytes"; exit 1; }
done
curl -sf "${PL_BOOKIE_METRICS[0]}" | grep '^bookie_rs_memory_part_bound_bytes' \
    | awk '{ printf "  %s %.0f MiB\n", $1, $2 / 1048576 }'
t=$(date +%s)
# A small broker cache as well, so nothing of the message is served from broker memory.
pl_broker_start managedLedgerCacheSizeMB=16
echo "  broker ready in $(($(date +%s) - t)) s"

# VmRSS every 0.5 s (VmHWM is the kernel's own peak); the trace stays in the work dir.
(while :; do
    line=$(date +%s.%N | cut -c1-14)
    for i in 0 1 2; do line="$line $(kib "${PL_BOOKIE_PID[$i]}" VmRSS)"; done
    echo "$line"
    sleep 0.5
done) >"$PL_DIR/rss.trace" 2>/dev/null &
sampler=$!

# The driver holds the message twice (sent and received) on its heap; it runs in the
# background so that pl_stop_all ends it too on Ctrl-C.
ok=0
PL_JAVA_OPTS="-Xms512m -Xmx$((size / 1048576 * 3 + 1024))m -XX:MaxDirectMemorySize=$((size / 1048576 * 2 + 1024))m" \
    pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" bookiers.pulsar.ChunkedRoundTrip \
    "$PL_SERVICE_URL" "$PL_ADMIN_URL" persistent://public/default/readback "$size"
wait "$PL_JAVA_PID" || ok=$?
sed 's/^/  /' "$PL_DIR/driver.out"
[ "$ok" = 0 ] || { echo "  driver failed ($ok); its log tail:"; tail -30 "$PL_DIR/driver.log"; }

# What each bookie served: the read-back came from the bookies, not from the broker's cache.
for i in 0 1 2; do
    curl -sf "${PL_BOOKIE_METRICS[$i]}" | grep -E '^bookie_(WRITE|READ)_BYTES' \
        | awk -v b="$i" '{ printf "  bookie %s: %s %.0f\n", b, $1, $2 }'
done
declare -a hwm rss10 rss30 rss60
for i in 0 1 2; do hwm[$i]=$(kib "${PL_BOOKIE_PID[$i]}" VmHWM); done
sleep 10; for i in 0 1 2; do rss10[$i]=$(kib "${PL_BOOKIE_PID[$i]}" VmRSS); done
sleep 20; for i in 0 1 2; do rss30[$i]=$(kib "${PL_BOOKIE_PID[$i]}" VmRSS); done
sleep $((idle_s - 30)); for i in 0 1 2; do rss60[$i]=$(kib "${PL_BOOKIE_PID[$i]}" VmRSS); done
kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; sampler=""
for i in 0 1 2; do
    maxrss=$(awk -v c=$((i + 2)) '$c > m { m = $c } END { print m + 0 }' "$PL_DIR/rss.trace")
    echo "(d) bookie $i: bound $(mib "${bound[$i]}") MiB, peak VmHWM $((hwm[i] / 1024)) MiB" \
        "($(awk -v h="${hwm[$i]}" -v b="${bound[$i]}" 'BEGIN { printf "%.0f", 100 * h * 1024 / b }') % of the bound);" \
        "VmRSS after the load: $((rss10[i] / 1024)) MiB at 10 s, $((rss30[i] / 1024)) MiB at 30 s," \
        "$((rss60[i] / 1024)) MiB at ${idle_s} s (sampled peak VmRSS $((maxrss / 1024)) MiB)"
    curl -sf "${PL_BOOKIE_METRICS[$i]}" | grep -E '^bookie_rs_memory_part_used_bytes' \
        | awk '{ printf "  idle: %s %.1f MiB\n", $1, $2 / 1048576 }'
done
exit "$ok"
