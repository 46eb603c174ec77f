# tests/pulsar/scenarios/all_kill.sh: scenario 5 of issue #16: every bookie and the broker
# SIGKILLed at once during production, all restarted on the same directories (and ports, so the
# same bookie ids), and every acknowledged message must come back, in order. Three bookies, 3/3/2;
# ZooKeeper keeps running. Sourced by tests/pulsar/run.sh (with launcher.sh and kill-common.sh).
#
# 1. SequenceProducer streams ALL_KILL_COUNT messages of ALL_KILL_BYTES (stock batching, 64 in
#    flight), printing each acknowledgement;
# 2. once ALL_KILL_AT are acknowledged, broker and bookies get SIGKILL in one `kill -9`, then the
#    producer: the acknowledged ones are the `acked` lines it printed (a bookie acknowledges an add
#    only after its journal fsync, so each of them is on two bookies' disks);
# 3. bookies restarted from their conf files, then the broker (the topic's open ledger is recovered
#    from the bookies);
# 4. SequenceCheck from earliest: messages 0..n-1 in order with equal bytes, n >= the number
#    acknowledged (messages written but not yet acknowledged at the kill may follow).

ALL_KILL_COUNT=${ALL_KILL_COUNT:-1000000}
ALL_KILL_BYTES=${ALL_KILL_BYTES:-1024}
ALL_KILL_AT=${ALL_KILL_AT:-3000}

# shellcheck source=../kill-common.sh
. "$PL_HERE/kill-common.sh"

scenario_all_kill() {
    local impl=$1 wire=$2 topic="persistent://public/default/all-kill-$wire" t v2 i acked pids
    v2=$([ "$wire" = v2 ] && echo true || echo false)
    pl_init || return 1
    echo "== all_kill: impl=$impl wire=$wire ${ALL_KILL_BYTES}-byte messages, kill after $ALL_KILL_AT acknowledged, work dir $PL_DIR"
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    for i in 0 1 2; do pl_any_bookie_start "$impl" "$i" || return 1; done
    pl_bookies_registered 3 || return 1
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" metadataStoreSessionTimeoutMillis=10000 || return 1
    echo "  3 $impl bookies, broker ready"
    PL_JAVA_OPTS="-Xmx512m" pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" \
        bookiers.pulsar.SequenceProducer "$PL_SERVICE_URL" "$topic" "$ALL_KILL_COUNT" "$ALL_KILL_BYTES"
    local producer=$PL_JAVA_PID
    kill_wait_line "$PL_DIR/driver.out" "^acked $((ALL_KILL_AT - 1)) " "$producer" 300 || { tail -20 "$PL_DIR/driver.log"; return 1; }
    pids="$PL_BROKER_PID ${PL_BOOKIE_PID[*]}"
    local before
    before=$(pl_zk_registrations)
    # shellcheck disable=SC2086
    kill -9 $pids
    kill -9 "$producer" 2>/dev/null || true
    for i in $pids "$producer"; do wait "$i" 2>/dev/null || true; done
    acked=$(grep -c '^acked ' "$PL_DIR/driver.out" || true)
    # The acknowledgements are in send order: the acked lines must be 0..acked-1.
    [ "$(grep '^acked ' "$PL_DIR/driver.out" | tail -1 | cut -d' ' -f2)" = "$((acked - 1))" ] \
        || { echo "  FAIL: the producer's acked lines are not 0..$((acked - 1))"; return 1; }
    echo "  SIGKILL broker and bookies with $acked acknowledged, then the producer"
    t=$(date +%s)
    for i in 0 1 2; do pl_any_bookie_restart "$impl" "$i" || return 1; done
    pl_bookies_registered 3 || return 1
    # Their old registrations expire first (the killed sessions' timeout): the broker starts
    # once every bookie is registered by its new process (pl_bookies_reregistered says why).
    pl_bookies_reregistered 3 "$before" >/dev/null || return 1
    echo "  bookies restarted on their directories, registered by new sessions in $(($(date +%s) - t)) s"
    t=$(date +%s)
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" metadataStoreSessionTimeoutMillis=10000 || return 1
    echo "  broker restarted, ready in $(($(date +%s) - t)) s"
    kill_check "$topic" "$ALL_KILL_BYTES" "$acked" || return 1
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-after.txt" || return 1
    SUMMARY="acked=$acked bytes=$ALL_KILL_BYTES consumed=all-acked-in-order-equal"
}
