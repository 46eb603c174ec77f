#!/usr/bin/env bash
# tests/pulsar/launcher.sh: a stock Pulsar cluster over bookie-rs bookies on loopback, for the
# drivers and benchmarks of issue #16. Source it; it owns every process it starts and stops them
# all in pl_stop_all (call it from an EXIT trap). No Pulsar or BookKeeper code is copied: the
# broker, the metadata tool and the client come from Maven (tests/pulsar/pom.xml).
#
#   . tests/pulsar/launcher.sh
#   pl_init                       # work dir $PL_DIR, builds the Maven project (offline if it can)
#   pl_maven_package [LOG]        # that Maven build alone (online output to LOG)
#   pl_zk_start                   # ZooKeeper on 127.0.0.1 (scripts/zk.sh) -> $PL_ZK
#   pl_metadata_setup             # PulsarClusterMetadataSetup (cluster "bookie-rs")
#   pl_bookie_start I [KEY=VAL..] # our bookie I (0..), registered in $PL_ZK; stock bk_server.conf
#                                 # keys given override the defaults below; -> PL_BOOKIE_PID[I],
#                                 # PL_BOOKIE_METRICS[I] (its /metrics URL); returns once its port is open
#   pl_java_bookie_start I [KEY=VAL..] # the same with the stock Java bookie (the reference):
#                                 # org.apache.bookkeeper.server.Main of the broker's bookkeeper-server
#   pl_any_bookie_start IMPL I [KEY=VAL..] # IMPL rust or java
#   pl_any_bookie_restart IMPL I  # bookie I again, from its existing conf: the same port (so the
#                                 # same bookie id) and directories, after it was killed
#   pl_cluster_start IMPL WIRE N  # ZooKeeper, metadata, N bookies of IMPL, one broker with
#                                 # bookkeeperUseV2WireProtocol of WIRE (v2|v3): the plain cluster
#                                 # the scenarios without TLS share
#   pl_bookies_registered N       # waits until N bookies are registered in ZooKeeper
#   pl_broker_start [KEY=VAL..]   # one stock broker (PulsarBrokerStarter, functions worker off),
#                                 # -> $PL_SERVICE_URL, $PL_ADMIN_URL, $PL_BROKER_PID
#   pl_java CLASS ARGS..          # a driver class of this project (bookiers.pulsar.*)
#   pl_java_bg OUT ERR CLASS ARGS.. # the same in the background -> $PL_JAVA_PID
#   pl_stop_all                   # stops broker, bookies, ZooKeeper, then runs PL_CLEANUP's commands
#                                 # (newest first); removes $PL_DIR unless PL_KEEP=1
#
# Env: BOOKIE_BIN (default target/release/bookie, else target/debug/bookie), PL_DIR (default a
# fresh /tmp/bk-pulsar.XXXXXX), PL_KEEP=1 keeps it (logs: $PL_DIR/*.log), PL_BROKER_HEAP,
# PL_BROKER_DIRECT (JVM sizes of the broker, default 1g / 2g), PL_JAVA_BOOKIE_HEAP /
# PL_JAVA_BOOKIE_DIRECT (of a stock Java bookie, default 256m / 512m) and PL_JAVA_BOOKIE_JVM (its
# GC and JIT flags, default "-XX:+UseSerialGC -XX:TieredStopAtLevel=1": quick to start, for the
# tests; set empty for the JVM's defaults, as a benchmark should). Fixed ports instead of free ones
# (to keep to a port range on a shared machine): PL_ZK_PORT, PL_BOOKIE_PORT_BASE (bookie I on
# BASE+I, its metrics on BASE+50+I), PL_BROKER_PORT, PL_WEB_PORT.
PL_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PL_ROOT="$(cd "$PL_HERE/../.." && pwd)"
PL_PIDS=()
# Commands pl_stop_all runs once every process is stopped, before the work dir goes (a scenario's
# loop mount: unmounted and detached there, also on failure).
PL_CLEANUP=()
declare -a PL_BOOKIE_PID PL_BOOKIE_METRICS PL_BOOKIE_PORT
# Pulsar's bin/pulsar opens these to the broker on Java 17+.
PL_JAVA_OPENS=(--add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true)

# pl_free_port: a loopback port nothing listens on and this run has not handed out before,
# from 20000-31999, below the kernel's ephemeral range (from which bind-to-0 and every
# outgoing connection take ports, and which hands a just-released port out again). The next
# candidate lives in $PL_DIR/next-port, as callers run this in a subshell.
pl_free_port() {
    python3 - "$PL_DIR/next-port" <<'PY'
import os, socket, sys
state = sys.argv[1]
try:
    offset = int(open(state).read())
except (OSError, ValueError):
    offset = os.getppid() * 7919 % 12000
for _ in range(12000):
    port = 20000 + offset
    offset = (offset + 1) % 12000
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    open(state, "w").write(str(offset))
    print(port)
    sys.exit(0)
sys.exit("pl_free_port: no free loopback port in 20000-31999")
PY
}

pl_init() {
    PL_DIR=${PL_DIR:-$(mktemp -d /tmp/bk-pulsar.XXXXXX)}
    mkdir -p "$PL_DIR"
    if [ -z "${BOOKIE_BIN:-}" ]; then
        for b in "$PL_ROOT/target/release/bookie" "$PL_ROOT/target/debug/bookie"; do
            if [ -x "$b" ]; then BOOKIE_BIN=$b; break; fi
        done
    fi
    [ -x "${BOOKIE_BIN:-}" ] || { echo "launcher: no bookie binary (cargo build --release -p bookie)" >&2; return 1; }
    # A caller that already ran pl_maven_package (the demo, with its progress line) sets
    # PL_MAVEN_DONE=1.
    [ -n "${PL_MAVEN_DONE:-}" ] || pl_maven_package || return 1
    PL_CP="$PL_HERE/target/classes:$PL_HERE/target/lib/*"
}

# pl_maven_package [LOG]: builds this Maven project (drivers, target/lib with the broker's jars):
# offline when ~/.m2 has everything, else online (the first run fetches ~300 jars); the online
# run's output goes to LOG (default quiet).
pl_maven_package() {
    (cd "$PL_HERE" && mvn -B -q -o package >/dev/null 2>&1) && return 0
    if [ -n "${1:-}" ]; then
        (cd "$PL_HERE" && mvn -B package >"$1" 2>&1)
    else
        (cd "$PL_HERE" && mvn -B -q package)
    fi
}

pl_zk_start() {
    PL_ZK=$("$PL_ROOT/scripts/zk.sh" start "$PL_DIR/zk" "${PL_ZK_PORT:-0}" $$) || return 1
    PL_PIDS+=("$(cat "$PL_DIR/zk/zk.pid")")
}

pl_java() {
    local cls=$1; shift
    java "${PL_JAVA_OPENS[@]}" -Dlog4j2.configurationFile="$PL_HERE/log4j2.properties" \
        ${PL_JAVA_OPTS:-} -cp "$PL_CP" "$cls" "$@"
}

# pl_java_bg OUT ERR CLASS ARGS..: a driver in the background, stdout to OUT, stderr to ERR;
# -> $PL_JAVA_PID (owned: pl_stop_all ends it).
pl_java_bg() {
    local out=$1 err=$2 cls=$3; shift 3
    java "${PL_JAVA_OPENS[@]}" -Dlog4j2.configurationFile="$PL_HERE/log4j2.properties" \
        ${PL_JAVA_OPTS:-} -cp "$PL_CP" "$cls" "$@" >"$out" 2>"$err" &
    PL_JAVA_PID=$!
    PL_PIDS+=("$PL_JAVA_PID")
}

pl_metadata_setup() {
    PL_BROKER_PORT=${PL_BROKER_PORT:-$(pl_free_port)}
    PL_WEB_PORT=${PL_WEB_PORT:-$(pl_free_port)}
    PL_SERVICE_URL="pulsar://127.0.0.1:$PL_BROKER_PORT"
    PL_ADMIN_URL="http://127.0.0.1:$PL_WEB_PORT"
    PL_JAVA_OPTS="-Xmx256m" pl_java org.apache.pulsar.PulsarClusterMetadataSetup \
        --cluster bookie-rs --metadata-store "zk:$PL_ZK" --configuration-metadata-store "zk:$PL_ZK" \
        --web-service-url "$PL_ADMIN_URL" --broker-service-url "$PL_SERVICE_URL" \
        >"$PL_DIR/metadata-setup.log" 2>&1 \
        || { echo "launcher: PulsarClusterMetadataSetup failed" >&2; tail -20 "$PL_DIR/metadata-setup.log" >&2; return 1; }
}

# pl_bookie_conf I KEY=VAL..: writes $PL_DIR/bookieI/bk_server.conf (stock keys, the same file
# either implementation takes; docs/config.md) -> PL_BOOKIE_PORT[I], PL_BOOKIE_METRICS[I].
pl_bookie_conf() {
    local i=$1; shift
    local d="$PL_DIR/bookie$i" port mport
    if [ -n "${PL_BOOKIE_PORT_BASE:-}" ]; then
        port=$((PL_BOOKIE_PORT_BASE + i)); mport=$((PL_BOOKIE_PORT_BASE + 50 + i))
    else
        port=$(pl_free_port); mport=$(pl_free_port)
    fi
    mkdir -p "$d/journal" "$d/ledgers"
    {
        echo "bookiePort=$port"
        echo "advertisedAddress=127.0.0.1"
        echo "allowLoopback=true"
        echo "journalDirectories=$d/journal"
        echo "ledgerDirectories=$d/ledgers"
        echo "metadataServiceUri=zk+hierarchical://$PL_ZK/ledgers"
        echo "zkServers=$PL_ZK"
        echo "nettyMaxFrameSizeBytes=5253120"
        echo "httpServerEnabled=false"
        echo "statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider"
        echo "prometheusStatsHttpAddress=127.0.0.1"
        echo "prometheusStatsHttpPort=$mport"
        # Scenarios are not about disk thresholds (but full_ledger_disk, which sets its own):
        # the host's disk may be fuller than the stock 95 % (CI's can be), and a bookie over it
        # starts read-only, leaving the broker "Not enough non-faulty bookies".
        case " $* " in
            *" diskUsageThreshold="*) ;;
            *) echo "diskUsageThreshold=0.999"; echo "diskUsageWarnThreshold=0.998" ;;
        esac
        for kv in "$@"; do echo "$kv"; done
    } >"$d/bk_server.conf"
    PL_BOOKIE_PORT[$i]=$port
    PL_BOOKIE_METRICS[$i]="http://127.0.0.1:$mport/metrics"
}

# pl_bookie_wait I PID: owns PID as bookie I; returns once its port accepts connections.
pl_bookie_wait() {
    local i=$1 pid=$2 port=${PL_BOOKIE_PORT[$1]}
    PL_PIDS+=("$pid")
    PL_BOOKIE_PID[$i]=$pid
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || { echo "launcher: bookie $i exited" >&2; tail -20 "$PL_DIR/bookie$i.log" >&2; return 1; }
        if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then exec 3>&- 3<&-; return 0; fi
        sleep 0.2
    done
    echo "launcher: bookie $i did not open port $port within 60 s" >&2
    tail -20 "$PL_DIR/bookie$i.log" >&2
    return 1
}

pl_bookie_start() {
    local i=$1; shift
    pl_bookie_conf "$i" "$@"
    pl_bookie_launch "$i"
}

pl_bookie_launch() {
    local i=$1
    "$BOOKIE_BIN" --conf "$PL_DIR/bookie$i/bk_server.conf" >>"$PL_DIR/bookie$i.log" 2>&1 &
    pl_bookie_wait "$i" $!
}

# The stock Java bookie, from the bookkeeper-server jar the broker brings (4.17.2), with the
# JVM sizes tests/interop gives it (PL_JAVA_BOOKIE_HEAP / PL_JAVA_BOOKIE_DIRECT, 256m / 512m).
pl_java_bookie_start() {
    local i=$1; shift
    pl_bookie_conf "$i" "$@"
    pl_java_bookie_launch "$i"
}

pl_java_bookie_launch() {
    local i=$1 jvm=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1)
    if [ "${PL_JAVA_BOOKIE_JVM+set}" = set ]; then read -ra jvm <<<"$PL_JAVA_BOOKIE_JVM"; fi
    java "${PL_JAVA_OPENS[@]}" -Xms64m -Xmx"${PL_JAVA_BOOKIE_HEAP:-256m}" \
        -XX:MaxDirectMemorySize="${PL_JAVA_BOOKIE_DIRECT:-512m}" "${jvm[@]}" \
        -Dlog4j2.configurationFile="$PL_HERE/log4j2.properties" \
        -cp "$PL_CP" org.apache.bookkeeper.server.Main --conf "$PL_DIR/bookie$i/bk_server.conf" \
        >>"$PL_DIR/bookie$i.log" 2>&1 &
    pl_bookie_wait "$i" $!
}

pl_any_bookie_start() {
    local impl=$1; shift
    case $impl in
        rust) pl_bookie_start "$@" ;;
        java) pl_java_bookie_start "$@" ;;
        *) echo "launcher: unknown bookie implementation '$impl' (rust or java)" >&2; return 2 ;;
    esac
}

# pl_any_bookie_restart IMPL I: bookie I from the conf pl_bookie_conf wrote (its port, hence its
# bookie id, and its directories kept); its log is appended to.
pl_any_bookie_restart() {
    case $1 in
        rust) pl_bookie_launch "$2" ;;
        java) pl_java_bookie_launch "$2" ;;
        *) echo "launcher: unknown bookie implementation '$1' (rust or java)" >&2; return 2 ;;
    esac
}

# pl_bookie_index HOST:PORT: which bookie I (0..) has that bookie id, or nothing.
pl_bookie_index() {
    local i
    for i in "${!PL_BOOKIE_PORT[@]}"; do
        [ "127.0.0.1:${PL_BOOKIE_PORT[$i]}" = "$1" ] && { echo "$i"; return 0; }
    done
    return 1
}

# pl_cluster_start IMPL WIRE N [BOOKIE_KEY=VAL..]: the plain cluster of the scenarios without TLS.
pl_cluster_start() {
    local impl=$1 wire=$2 n=$3 i t; shift 3
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    t=$(date +%s)
    for ((i = 0; i < n; i++)); do pl_any_bookie_start "$impl" "$i" "$@" || return 1; done
    pl_bookies_registered "$n" || return 1
    echo "  $n $impl bookies registered in $(($(date +%s) - t)) s"
    t=$(date +%s)
    pl_broker_start "bookkeeperUseV2WireProtocol=$([ "$wire" = v2 ] && echo true || echo false)" || return 1
    echo "  broker ready in $(($(date +%s) - t)) s"
}

# pl_broker_kill: SIGKILL of the broker (no shutdown, its ledgers left open).
pl_broker_kill() {
    kill -9 "$PL_BROKER_PID" 2>/dev/null || true
    wait "$PL_BROKER_PID" 2>/dev/null || true
}

# pl_bookies_registered N: waits (60 s) until N bookies are under /ledgers/available.
pl_bookies_registered() {
    local n=$1 got
    for _ in $(seq 1 30); do
        got=$(java -cp "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar" \
            org.apache.zookeeper.ZooKeeperMain -server "$PL_ZK" ls /ledgers/available 2>/dev/null \
            | grep -o '127\.0\.0\.1:[0-9]*' | sort -u | wc -l)
        [ "$got" -ge "$n" ] && return 0
        sleep 2
    done
    echo "launcher: only $got of $n bookies registered in ZooKeeper" >&2
    return 1
}

# pl_zk_registrations: a line "<bookie id> <session>" for each bookie registered under
# /ledgers/available (writable or read-only), from ZooKeeper's `dump` of the sessions that
# hold ephemeral nodes.
pl_zk_registrations() {
    local port=${PL_ZK##*:}
    { exec 3<>"/dev/tcp/127.0.0.1/$port" && echo dump >&3 && timeout 2 cat <&3; } 2>/dev/null | awk '
        /^0x/ { s = $1; sub(":$", "", s) }
        /\/ledgers\/available\// { n = split($1, p, "/"); if (p[n] != "readonly") print p[n], s }' | sort
}

# pl_bookies_reregistered N BEFORE: waits (60 s at most) until N bookies are registered by
# sessions none of which is in BEFORE (pl_zk_registrations taken before a kill). A killed
# bookie's node stays until its session expires, and a restarted one registers only after
# that, so pl_bookies_registered, which counts nodes, passes at once on the dead sessions'
# nodes. Starting the broker only after this makes "restarted" mean registered again; it
# also turned up a bookie bug: a bookie restarted 0.1 s after SIGKILL waited 1 x zkTimeout
# for its old node, exited, and left the broker "Not enough non-faulty bookies available"
# (fixed: bookie/src/registration.rs PREVIOUS_SESSION_WAIT_FACTOR). -> prints the seconds waited.
pl_bookies_reregistered() {
    local n=$1 before=$2 t0 now fresh
    t0=$(date +%s)
    while [ $(($(date +%s) - t0)) -lt 60 ]; do
        now=$(pl_zk_registrations)
        fresh=$(awk 'NR == FNR { old[$2] = 1; next } NF && !($2 in old)' <(printf '%s\n' "$before") <(printf '%s\n' "$now") | wc -l)
        [ "$fresh" -ge "$n" ] && { echo $(($(date +%s) - t0)); return 0; }
        sleep 0.5
    done
    echo "launcher: $fresh of $n bookies re-registered by a new session in 60 s; before: $before; now: $now" >&2
    return 1
}

pl_broker_start() {
    local conf="$PL_DIR/broker.conf"
    {
        echo "clusterName=bookie-rs"
        echo "metadataStoreUrl=zk:$PL_ZK"
        echo "configurationMetadataStoreUrl=zk:$PL_ZK"
        echo "bookkeeperMetadataServiceUri=zk+hierarchical://$PL_ZK/ledgers"
        echo "brokerServicePort=$PL_BROKER_PORT"
        echo "webServicePort=$PL_WEB_PORT"
        echo "bindAddress=127.0.0.1"
        echo "advertisedAddress=127.0.0.1"
        echo "managedLedgerDefaultEnsembleSize=${PL_E:-3}"
        echo "managedLedgerDefaultWriteQuorum=${PL_W:-3}"
        echo "managedLedgerDefaultAckQuorum=${PL_A:-2}"
        echo "functionsWorkerEnabled=false"
        echo "brokerDeleteInactiveTopicsEnabled=false"
        for kv in "$@"; do echo "$kv"; done
    } >"$conf"
    java "${PL_JAVA_OPENS[@]}" -Xms256m -Xmx"${PL_BROKER_HEAP:-1g}" \
        -XX:MaxDirectMemorySize="${PL_BROKER_DIRECT:-2g}" \
        -Dlog4j2.configurationFile="$PL_HERE/log4j2.properties" -Dpulsar.log.file="$PL_DIR/broker.log" \
        -cp "$PL_CP" org.apache.pulsar.PulsarBrokerStarter --broker-conf "$conf" \
        >>"$PL_DIR/broker.log" 2>&1 &
    PL_BROKER_PID=$!
    PL_PIDS+=("$PL_BROKER_PID")
    for _ in $(seq 1 240); do
        kill -0 "$PL_BROKER_PID" 2>/dev/null || { echo "launcher: broker exited" >&2; tail -30 "$PL_DIR/broker.log" >&2; return 1; }
        if curl -sf "$PL_ADMIN_URL/admin/v2/brokers/ready" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    echo "launcher: broker not ready within 120 s" >&2
    tail -30 "$PL_DIR/broker.log" >&2
    return 1
}

pl_stop_all() {
    local i pid
    # Reverse order: broker, bookies, ZooKeeper.
    for ((i = ${#PL_PIDS[@]} - 1; i >= 0; i--)); do
        pid=${PL_PIDS[$i]}
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    PL_PIDS=()
    for ((i = ${#PL_CLEANUP[@]} - 1; i >= 0; i--)); do eval "${PL_CLEANUP[$i]}" || true; done
    PL_CLEANUP=()
    if [ -n "${PL_DIR:-}" ] && [ -z "${PL_KEEP:-}" ]; then rm -rf "$PL_DIR"; fi
}
