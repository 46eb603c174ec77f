# tests/pulsar/scenarios/ordered.sh: scenario 1 of issue #16: ordered small messages through a
# stock broker over three bookies (3/3/2), read back by an Exclusive and by a Failover
# subscription after the topic was unloaded (reads from the bookies), every message's number and
# bytes checked (OrderedRoundTrip). Sourced by tests/pulsar/run.sh (with launcher.sh).

ORDERED_COUNT=${ORDERED_COUNT:-2000}
ORDERED_BYTES=${ORDERED_BYTES:-1024}

scenario_ordered() {
    local impl=$1 wire=$2 t ok=1
    pl_init || return 1
    echo "== ordered: impl=$impl wire=$wire $ORDERED_COUNT x $ORDERED_BYTES bytes, work dir $PL_DIR"
    pl_cluster_start "$impl" "$wire" 3 || return 1
    t=$(date +%s)
    PL_JAVA_OPTS="-Xmx512m" pl_java bookiers.pulsar.OrderedRoundTrip "$PL_SERVICE_URL" "$PL_ADMIN_URL" \
        "persistent://public/default/ordered-$wire" "$ORDERED_COUNT" "$ORDERED_BYTES" \
        >"$PL_DIR/driver.out" 2>"$PL_DIR/driver.log" || ok=0
    sed 's/^/  /' "$PL_DIR/driver.out"
    if [ "$ok" != 1 ] || ! grep -q '^exclusive: .* in order, contents equal' "$PL_DIR/driver.out" \
        || ! grep -q '^failover: .* in order, contents equal' "$PL_DIR/driver.out"; then
        echo "  FAIL: ordered round trip (log $PL_DIR/driver.log)"
        tail -20 "$PL_DIR/driver.log"
        return 1
    fi
    echo "  driver: $(($(date +%s) - t)) s"
    SUMMARY="count=$ORDERED_COUNT bytes=$ORDERED_BYTES exclusive=in-order failover=in-order"
}
