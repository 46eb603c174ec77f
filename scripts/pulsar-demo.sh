#!/usr/bin/env bash
# scripts/pulsar-demo.sh: the one-command demo of issue #16: a stock Apache Pulsar 4.0.7 broker
# over three bookie-rs bookies on loopback. Sends a file (default: 100 MiB of random bytes) as ONE
# chunked message (enableChunking, batching off, 5 MiB chunks = the broker's stock maxMessageSize),
# reads it back from the bookies, prints both SHA-256 and the publish and consume throughput, and
# where each bookie's metrics and admin endpoints are. Stops everything at the end, or on Ctrl-C.
#
#   scripts/pulsar-demo.sh [--keep-running] [FILE]
#       FILE            what to send (1 byte .. 2 GiB - 9); default 100 MiB from /dev/urandom
#       --keep-running  leave ZooKeeper, the bookies and the broker up after the round trip, until
#                       Ctrl-C
#
# Needs java 17+, mvn, curl, python3 (and cargo if no bookie binary is built). The first run fetches
# the broker and client jars from Maven (tests/pulsar/pom.xml, ~300 jars into ~/.m2; later runs are
# offline) and builds `bookie` if target/release/bookie and target/debug/bookie are both missing
# (release; DEMO_PROFILE=debug for a debug build). The cluster is tests/pulsar/launcher.sh (the one
# the stock-Pulsar suite uses): ZooKeeper, PulsarClusterMetadataSetup, 3 bookies, 1 broker,
# ensemble / write / ack quorum 3 / 3 / 2. Env: BOOKIE_BIN, PL_KEEP=1 keeps the work dir (logs),
# and launcher.sh's port knobs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
keep_running=0 file=""
while [ $# -gt 0 ]; do
    case $1 in
        --keep-running) keep_running=1; shift ;;
        -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "usage: $0 [--keep-running] [FILE]" >&2; exit 2 ;;
        *) [ -z "$file" ] || { echo "usage: $0 [--keep-running] [FILE]" >&2; exit 2; }; file=$1; shift ;;
    esac
done
if [ -n "$file" ]; then
    [ -f "$file" ] && [ -r "$file" ] || { echo "pulsar-demo: $file: not a readable file" >&2; exit 2; }
    file=$(cd "$(dirname "$file")" && pwd)/$(basename "$file")
fi
for tool in java mvn curl python3 sha256sum; do
    command -v "$tool" >/dev/null || { echo "pulsar-demo: needs $tool on PATH" >&2; exit 2; }
done

# shellcheck source=../tests/pulsar/launcher.sh
. "$root/tests/pulsar/launcher.sh"

# A progress line: `ticker_start TEXT [CMD]` rewrites "TEXT .. N s [CMD's output]" every second on
# the terminal until ticker_stop (not on a terminal: a new line every 15 s); CMD (a shell snippet)
# adds a detail such as a download count.
ticker=""
ticker_start() {
    local text=$1 detail=${2:-true} t0
    t0=$(date +%s)
    if [ -t 1 ]; then
        (while :; do
            printf '\r  %s .. %d s %s\033[K' "$text" $(($(date +%s) - t0)) "$(eval "$detail" 2>/dev/null)"
            sleep 1
        done) &
    else # not a terminal (a log): one line every 15 s
        (while :; do
            sleep 15
            printf '  %s .. %d s %s\n' "$text" $(($(date +%s) - t0)) "$(eval "$detail" 2>/dev/null)"
        done) &
    fi
    ticker=$!
}
ticker_stop() {
    if [ -n "$ticker" ]; then
        kill "$ticker" 2>/dev/null || true
        wait "$ticker" 2>/dev/null || true
        ticker=""
        if [ -t 1 ]; then printf '\r\033[K'; fi
    fi
}
step() { # step TEXT SECONDS_SINCE: a finished step's line
    echo "  $1 ($(($(date +%s) - $2)) s)"
}
finish() {
    ticker_stop
    if [ -n "${PL_PIDS[*]:-}" ]; then echo "stopping broker, bookies, ZooKeeper"; fi
    pl_stop_all
}
trap finish EXIT
trap 'echo; exit 130' INT TERM

echo "== bookie-rs behind a stock Apache Pulsar 4.0.7 broker"

# 1. The bookie binary (built if missing).
if [ -z "${BOOKIE_BIN:-}" ] && [ ! -x "$root/target/release/bookie" ] && [ ! -x "$root/target/debug/bookie" ]; then
    command -v cargo >/dev/null || { echo "pulsar-demo: no bookie binary and no cargo to build one" >&2; exit 2; }
    profile=${DEMO_PROFILE:-release}
    t=$(date +%s)
    mkdir -p "$root/target"
    ticker_start "building bookie ($profile; minutes the first time)" "tail -c 200 '$root/target/pulsar-demo-build.log' | tr '\r' '\n' | grep -o 'Compiling [^ ]*' | tail -1"
    if [ "$profile" = release ]; then flag=--release; else flag=""; fi
    (cd "$root" && cargo build $flag -p bookie >"$root/target/pulsar-demo-build.log" 2>&1) \
        || { ticker_stop; tail -20 "$root/target/pulsar-demo-build.log"; exit 1; }
    ticker_stop
    step "built target/$profile/bookie" "$t"
fi

# 2. The Maven artefacts (broker, clients, BookKeeper 4.17.2) and the drivers.
PL_DIR=${PL_DIR:-$(mktemp -d /tmp/bk-pulsar-demo.XXXXXX)}
mkdir -p "$PL_DIR"
t=$(date +%s)
ticker_start "Maven: broker and client jars (offline if ~/.m2 has them, else downloading)" \
    "c=\$(grep -c 'Downloaded from' '$PL_DIR/maven.log'); [ \"\${c:-0}\" -gt 0 ] && echo \"\$c files downloaded\""
pl_maven_package "$PL_DIR/maven.log" || { ticker_stop; echo "pulsar-demo: Maven build failed:" >&2; tail -30 "$PL_DIR/maven.log" >&2; exit 1; }
ticker_stop
step "Maven artefacts ready: $(find "$PL_HERE/target/lib" -name '*.jar' | wc -l) jars in tests/pulsar/target/lib" "$t"
PL_MAVEN_DONE=1 pl_init
echo "  bookie: $BOOKIE_BIN; work dir $PL_DIR"

# 3. The payload.
if [ -z "$file" ]; then
    file=$PL_DIR/payload.bin
    head -c 104857600 /dev/urandom >"$file"
    echo "  payload: 100 MiB (104857600 bytes) of random bytes in $file"
fi
bytes=$(stat -c %s "$file")

# 4. The cluster: ZooKeeper, metadata, 3 bookies (admin API and /metrics on their own ports), broker.
t=$(date +%s)
ticker_start "starting ZooKeeper and writing the cluster metadata"
pl_zk_start || { ticker_stop; exit 1; }
pl_metadata_setup || { ticker_stop; exit 1; }
ticker_stop
step "ZooKeeper on $PL_ZK, cluster metadata written" "$t"
t=$(date +%s)
declare -a admin_url
ticker_start "starting 3 bookie-rs bookies"
for i in 0 1 2; do
    hport=$(pl_free_port)
    pl_bookie_start "$i" httpServerEnabled=true httpServerHost=127.0.0.1 httpServerPort="$hport" || { ticker_stop; exit 1; }
    admin_url[$i]="http://127.0.0.1:$hport"
done
pl_bookies_registered 3 || { ticker_stop; exit 1; }
ticker_stop
step "3 bookies registered" "$t"
t=$(date +%s)
ticker_start "starting the stock Pulsar broker (PulsarBrokerStarter; ~20-40 s)"
pl_broker_start || { ticker_stop; exit 1; }
ticker_stop
step "broker ready: $PL_SERVICE_URL, admin $PL_ADMIN_URL" "$t"

echo
echo "Endpoints (open them while it runs; --keep-running keeps them up):"
for i in 0 1 2; do
    echo "  bookie $i  127.0.0.1:${PL_BOOKIE_PORT[$i]}  metrics ${admin_url[$i]}/metrics" \
        " admin ${admin_url[$i]}/api/v1/bookie/info  ${admin_url[$i]}/api/v1/bookie/list_bookies  (log $PL_DIR/bookie$i.log)"
done
echo "  broker    $PL_SERVICE_URL  admin $PL_ADMIN_URL/admin/v2/clusters  metrics $PL_ADMIN_URL/metrics/  (log $PL_DIR/broker.log)"
for i in 0 1 2; do
    curl -sf "${admin_url[$i]}/api/v1/bookie/info" >/dev/null \
        || echo "  (bookie $i: its admin API did not answer at ${admin_url[$i]}/api/v1/bookie/info)"
done

# 5. The round trip: one chunked message, the topic unloaded, read back from the bookies.
echo
topic=persistent://public/default/pulsar-demo
t=$(date +%s)
mib=$((bytes / 1048576 + 1))
ticker_start "sending $file ($bytes bytes) as one chunked message and reading it back"
rc=0
PL_JAVA_OPTS="-Xms256m -Xmx$((mib * 3 + 512))m -XX:MaxDirectMemorySize=$((mib * 2 + 512))m" \
    pl_java_bg "$PL_DIR/demo.out" "$PL_DIR/driver.log" bookiers.pulsar.FileRoundTrip \
    "$PL_SERVICE_URL" "$PL_ADMIN_URL" "$topic" "$file"
wait "$PL_JAVA_PID" || rc=$?
ticker_stop
sed 's/^/  /' "$PL_DIR/demo.out"
echo "  sha256sum of the file: $(sha256sum "$file" | cut -d' ' -f1)"
if [ "$rc" != 0 ]; then
    echo "pulsar-demo: the round trip FAILED (exit $rc); driver log tail:"
    tail -20 "$PL_DIR/driver.log"
    PL_KEEP=1
    echo "logs kept in $PL_DIR"
    exit 1
fi
step "round trip done: both SHA-256 equal" "$t"
echo "  bytes each bookie wrote and served (its /metrics):"
for i in 0 1 2; do
    curl -sf "${admin_url[$i]}/metrics" | awk -v b="$i" '
        $1 == "bookie_WRITE_BYTES" { w = $2 } $1 == "bookie_READ_BYTES" { r = $2 }
        END { printf "    bookie %s: bookie_WRITE_BYTES %.0f, bookie_READ_BYTES %.0f\n", b, w, r }'
done

if [ "$keep_running" = 1 ]; then
    echo
    echo "Up until Ctrl-C (topic $topic; the endpoints above)."
    while :; do sleep 3600; done
fi
