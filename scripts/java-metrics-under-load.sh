#!/usr/bin/env bash
# scripts/java-metrics-under-load.sh: records deploy/metric-names/java-nonzero-under-load.txt,
# the stock Java bookie's value (nonzero / zero / absent) of every metric name of the four lists
# checked by bookie/tests/ops_metric_coverage.rs, under that test's load.
#
# Runs a stock Apache BookKeeper 4.17.3 bookie (org.apache.bookkeeper.server.Main, DbLedgerStorage,
# PrometheusMetricsProvider with prometheusStatsLatencyRolloverSeconds=1) from the Maven
# repository tests/interop uses (~/.m2, offline), on a throwaway ZooKeeper (scripts/zk.sh), on
# loopback only; then `cargo test --test ops_metric_coverage record_java_nonzero_under_load`
# applies the load and writes the file; then stops both. Takes about a minute (plus the build).
#   scripts/java-metrics-under-load.sh [output-file]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/deploy/metric-names/java-nonzero-under-load.txt}
WORK=$(mktemp -d /tmp/bk-java-metrics.XXXXXX)
M2=${M2_REPO:-$HOME/.m2/repository}
JAVA_PID=""
cleanup() {
  if [[ -n "$JAVA_PID" ]]; then kill "$JAVA_PID" 2>/dev/null || true; wait "$JAVA_PID" 2>/dev/null || true; fi
  bash "$ROOT/scripts/zk.sh" stop "$WORK/zk" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Class path: the interop suite's dependencies, plus the Prometheus stats provider and what it
# needs (the versions ~/.m2 holds).
(cd "$ROOT/tests/interop" && mvn -B -q -o \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath -Dmdep.outputFile="$WORK/cp.txt")
CP=$(cat "$WORK/cp.txt")
JETTY=9.4.57.v20241219
for jar in \
  org/apache/bookkeeper/stats/prometheus-metrics-provider/4.17.2/prometheus-metrics-provider-4.17.2.jar \
  io/prometheus/simpleclient/0.16.0/simpleclient-0.16.0.jar \
  io/prometheus/simpleclient_hotspot/0.16.0/simpleclient_hotspot-0.16.0.jar \
  io/prometheus/simpleclient_tracer_common/0.16.0/simpleclient_tracer_common-0.16.0.jar \
  io/prometheus/simpleclient_tracer_otel/0.16.0/simpleclient_tracer_otel-0.16.0.jar \
  io/prometheus/simpleclient_tracer_otel_agent/0.16.0/simpleclient_tracer_otel_agent-0.16.0.jar \
  io/prometheus/simpleclient_servlet/0.15.0/simpleclient_servlet-0.15.0.jar \
  io/prometheus/simpleclient_servlet_common/0.15.0/simpleclient_servlet_common-0.15.0.jar \
  io/prometheus/simpleclient_common/0.15.0/simpleclient_common-0.15.0.jar \
  javax/servlet/javax.servlet-api/3.1.0/javax.servlet-api-3.1.0.jar \
  com/yahoo/datasketches/sketches-core/0.8.3/sketches-core-0.8.3.jar \
  com/yahoo/datasketches/memory/0.8.3/memory-0.8.3.jar \
  org/eclipse/jetty/jetty-server/$JETTY/jetty-server-$JETTY.jar \
  org/eclipse/jetty/jetty-servlet/$JETTY/jetty-servlet-$JETTY.jar \
  org/eclipse/jetty/jetty-http/$JETTY/jetty-http-$JETTY.jar \
  org/eclipse/jetty/jetty-io/$JETTY/jetty-io-$JETTY.jar \
  org/eclipse/jetty/jetty-util/$JETTY/jetty-util-$JETTY.jar \
  org/eclipse/jetty/jetty-security/$JETTY/jetty-security-$JETTY.jar \
  org/eclipse/jetty/jetty-util-ajax/$JETTY/jetty-util-ajax-$JETTY.jar; do
  [[ -f "$M2/$jar" ]] || { echo "java-metrics: missing $M2/$jar" >&2; exit 1; }
  CP="$CP:$M2/$jar"
done

ZK=$(bash "$ROOT/scripts/zk.sh" start "$WORK/zk" 0 $$)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port); METRICS=$(free_port)
mkdir -p "$WORK/journal" "$WORK/ledgers"
cat > "$WORK/bk_server.conf" <<CONF
bookiePort=$PORT
advertisedAddress=127.0.0.1
listeningInterface=lo
allowLoopback=true
journalDirectories=$WORK/journal
ledgerDirectories=$WORK/ledgers
metadataServiceUri=zk+hierarchical://$ZK/ledgers
zkServers=$ZK
zkTimeout=10000
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider
prometheusStatsHttpAddress=127.0.0.1
prometheusStatsHttpPort=$METRICS
prometheusStatsLatencyRolloverSeconds=1
httpServerEnabled=false
gcWaitTime=600000
flushInterval=1000
dbStorage_writeCacheMaxSizeMb=64
dbStorage_readAheadCacheMaxSizeMb=16
dbStorage_rocksDB_blockCacheSize=16777216
dbStorage_rocksDB_writeBufferSizeMB=4
journalPreAllocSizeMB=4
CONF
JAVA_OPTS=(-Xms64m -Xmx256m -XX:MaxDirectMemorySize=256m -XX:+UseSerialGC)
java "${JAVA_OPTS[@]}" -cp "$CP" org.apache.bookkeeper.bookie.BookieShell \
  -conf "$WORK/bk_server.conf" initnewcluster > "$WORK/init.log" 2>&1
java "${JAVA_OPTS[@]}" -cp "$CP" org.apache.bookkeeper.server.Main --conf "$WORK/bk_server.conf" \
  > "$WORK/bookie.log" 2>&1 &
JAVA_PID=$!
for _ in $(seq 120); do
  if curl -sf "http://127.0.0.1:$METRICS/metrics" >/dev/null 2>&1 \
     && grep -q "bookie.*started\|Started component bookie-server" "$WORK/bookie.log" 2>/dev/null; then break; fi
  kill -0 "$JAVA_PID" 2>/dev/null || { echo "java-metrics: the Java bookie exited; $WORK/bookie.log" >&2; exit 1; }
  sleep 1
done
echo "java-metrics: stock bookie on 127.0.0.1:$PORT, metrics on $METRICS (logs in $WORK)"
cd "$ROOT"
BK_JAVA_BOOKIE=127.0.0.1:$PORT BK_JAVA_METRICS=127.0.0.1:$METRICS BK_JAVA_OUT="$OUT" \
  cargo test -p bookie --test ops_metric_coverage -- --ignored --exact record_java_nonzero_under_load
echo "java-metrics: wrote $OUT"
