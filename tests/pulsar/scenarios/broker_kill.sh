# tests/pulsar/scenarios/broker_kill.sh: scenario 4 of issue #16: the broker SIGKILLed with the
# topic's ledger open, restarted, the ledger recovered (the new broker's BookKeeper client fences
# and closes it from what the bookies hold), everything consumed from earliest. Three bookies,
# 3/3/2. Sourced by tests/pulsar/run.sh (with launcher.sh and kill-common.sh).
#
# 1. SequenceProducer sends BROKER_KILL_COUNT messages of BROKER_KILL_BYTES (stock batching) and,
#    once all are acknowledged, keeps the producer open (the topic loaded, its ledger open);
# 2. TopicLedgers must show the last ledger OPEN; the broker is SIGKILLed, then the producer;
# 3. the broker is started again on the same ports (metadataStoreSessionTimeoutMillis 10 s, so its
#    dead predecessor's registration and bundle ownership expire soon);
# 4. SequenceCheck reads exactly BROKER_KILL_COUNT messages from earliest, in order, bytes equal;
#    TopicLedgers must show the ledger that was open now CLOSED (recovered).

BROKER_KILL_COUNT=${BROKER_KILL_COUNT:-2000}
BROKER_KILL_BYTES=${BROKER_KILL_BYTES:-1024}

# shellcheck source=../kill-common.sh
. "$PL_HERE/kill-common.sh"

scenario_broker_kill() {
    local impl=$1 wire=$2 topic="persistent://public/default/broker-kill-$wire" open_ledger t v2
    v2=$([ "$wire" = v2 ] && echo true || echo false)
    pl_init || return 1
    echo "== broker_kill: impl=$impl wire=$wire $BROKER_KILL_COUNT x $BROKER_KILL_BYTES bytes, work dir $PL_DIR"
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    local i
    for i in 0 1 2; do pl_any_bookie_start "$impl" "$i" || return 1; done
    pl_bookies_registered 3 || return 1
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" metadataStoreSessionTimeoutMillis=10000 || return 1
    echo "  3 $impl bookies, broker ready"
    PL_JAVA_OPTS="-Xmx512m" pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" \
        bookiers.pulsar.SequenceProducer "$PL_SERVICE_URL" "$topic" "$BROKER_KILL_COUNT" "$BROKER_KILL_BYTES" --hold
    local producer=$PL_JAVA_PID
    kill_wait_line "$PL_DIR/driver.out" '^holding' "$producer" 300 || { tail -20 "$PL_DIR/driver.log"; return 1; }
    grep -q "^all-acked $BROKER_KILL_COUNT\$" "$PL_DIR/driver.out" || { echo "  FAIL: not every message acknowledged"; return 1; }
    echo "  producer: all $BROKER_KILL_COUNT acknowledged, holding the topic open"
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-before.txt" || return 1
    open_ledger=$(grep ' state OPEN ' "$PL_DIR/ledgers-before.txt" | tail -1 | cut -d' ' -f2)
    [ -n "$open_ledger" ] || { echo "  FAIL: the topic has no OPEN ledger before the kill"; return 1; }
    pl_broker_kill
    kill -9 "$producer" 2>/dev/null || true
    wait "$producer" 2>/dev/null || true
    echo "  SIGKILL broker (ledger $open_ledger open), then the producer"
    t=$(date +%s)
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" metadataStoreSessionTimeoutMillis=10000 || return 1
    echo "  broker restarted, ready in $(($(date +%s) - t)) s"
    kill_check "$topic" "$BROKER_KILL_BYTES" "$BROKER_KILL_COUNT" --exact "$BROKER_KILL_COUNT" || return 1
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-after.txt" || return 1
    grep -q "^ledger $open_ledger state CLOSED " "$PL_DIR/ledgers-after.txt" \
        || { echo "  FAIL: ledger $open_ledger was not recovered (not CLOSED)"; return 1; }
    echo "  ledger $open_ledger: OPEN before the kill, CLOSED (recovered) after the restart"
    SUMMARY="count=$BROKER_KILL_COUNT bytes=$BROKER_KILL_BYTES recovered=ledger$open_ledger consumed=all-in-order-equal"
}
