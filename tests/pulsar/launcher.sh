#!/usr/bin/env bash
# tests/pulsar/launcher.sh: a stock Pulsar cluster over bookie-rs bookies on loopback, for the
# drivers and benchmarks of issue #16. Source it; it owns every process it starts and stops them
# all in pl_stop_all (call it from an EXIT trap). No Pulsar or BookKeeper code is copied: the
# broker, the metadata tool and the client come from Maven (tests/pulsar/pom.xml).
#
#   . tests/pulsar/launcher.sh
#   pl_init                       # work dir $PL_DIR, builds the Maven project (offline if it can)
#   pl_zk_start                   # ZooKeeper on 127.0.0.1 (scripts/zk.sh) -> $PL_ZK
#   pl_metadata_setup             # PulsarClusterMetadataSetup (cluster "bookie-rs")
#   pl_bookie_start I [KEY=VAL..] # our bookie I (0..), registered in $PL_ZK; stock bk_server.conf
#                                 # keys given override the defaults below; -> PL_BOOKIE_PID[I],
#                                 # PL_BOOKIE_METRICS[I] (its /metrics URL); returns once its port is open
#   pl_bookies_registered N       # waits until N bookies are registered in ZooKeeper
#   pl_broker_start [KEY=VAL..]   # one stock broker (PulsarBrokerStarter, functions worker off),
#                                 # -> $PL_SERVICE_URL, $PL_ADMIN_URL, $PL_BROKER_PID
#   pl_java CLASS ARGS..          # a driver class of this project (bookiers.pulsar.*)
#   pl_java_bg OUT ERR CLASS ARGS.. # the same in the background -> $PL_JAVA_PID
#   pl_stop_all                   # stops broker, bookies, ZooKeeper; removes $PL_DIR unless PL_KEEP=1
#
# Env: BOOKIE_BIN (default target/release/bookie, else target/debug/bookie), PL_DIR (default a
# fresh /tmp/bk-pulsar.XXXXXX), PL_KEEP=1 keeps it (logs: $PL_DIR/*.log), PL_BROKER_HEAP,
# PL_BROKER_DIRECT (JVM sizes of the broker, default 1g / 2g).
PL_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PL_ROOT="$(cd "$PL_HERE/../.." && pwd)"
PL_PIDS=()
declare -a PL_BOOKIE_PID PL_BOOKIE_METRICS PL_BOOKIE_PORT
# Pulsar's bin/pulsar opens these to the broker on Java 17+.
PL_JAVA_OPENS=(--add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true)

pl_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
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
    (cd "$PL_HERE" && { mvn -B -q -o package 2>/dev/null || mvn -B -q package; }) || return 1
    PL_CP="$PL_HERE/target/classes:$PL_HERE/target/lib/*"
}

pl_zk_start() {
    PL_ZK=$("$PL_ROOT/scripts/zk.sh" start "$PL_DIR/zk" 0 $$) || return 1
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
    PL_BROKER_PORT=$(pl_free_port)
    PL_WEB_PORT=$(pl_free_port)
    PL_SERVICE_URL="pulsar://127.0.0.1:$PL_BROKER_PORT"
    PL_ADMIN_URL="http://127.0.0.1:$PL_WEB_PORT"
    PL_JAVA_OPTS="-Xmx256m" pl_java org.apache.pulsar.PulsarClusterMetadataSetup \
        --cluster bookie-rs --metadata-store "zk:$PL_ZK" --configuration-metadata-store "zk:$PL_ZK" \
        --web-service-url "$PL_ADMIN_URL" --broker-service-url "$PL_SERVICE_URL" \
        >"$PL_DIR/metadata-setup.log" 2>&1 \
        || { echo "launcher: PulsarClusterMetadataSetup failed" >&2; tail -20 "$PL_DIR/metadata-setup.log" >&2; return 1; }
}

pl_bookie_start() {
    local i=$1; shift
    local d="$PL_DIR/bookie$i" port mport
    port=$(pl_free_port); mport=$(pl_free_port)
    mkdir -p "$d/journal" "$d/ledgers"
    # Stock bk_server.conf keys; the same conf a Java bookie would take (docs/config.md).
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
        for kv in "$@"; do echo "$kv"; done
    } >"$d/bk_server.conf"
    "$BOOKIE_BIN" --conf "$d/bk_server.conf" >"$PL_DIR/bookie$i.log" 2>&1 &
    local pid=$!
    PL_PIDS+=("$pid")
    PL_BOOKIE_PID[$i]=$pid
    PL_BOOKIE_PORT[$i]=$port
    PL_BOOKIE_METRICS[$i]="http://127.0.0.1:$mport/metrics"
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || { echo "launcher: bookie $i exited" >&2; tail -20 "$PL_DIR/bookie$i.log" >&2; return 1; }
        if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then exec 3>&- 3<&-; return 0; fi
        sleep 0.2
    done
    echo "launcher: bookie $i did not open port $port within 60 s" >&2
    tail -20 "$PL_DIR/bookie$i.log" >&2
    return 1
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
        >"$PL_DIR/broker.log" 2>&1 &
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
    if [ -n "${PL_DIR:-}" ] && [ -z "${PL_KEEP:-}" ]; then rm -rf "$PL_DIR"; fi
}
