# tests/pulsar/scenarios/bookie_kill.sh: scenario 3 of issue #16: a bookie of the ensemble
# SIGKILLed during a stream of chunked messages. Four bookies, ensemble / write / ack 3/3/2, so
# the broker's BookKeeper client can replace the dead bookie (an ensemble change) and go on.
# Sourced by tests/pulsar/run.sh (with launcher.sh and kill-common.sh).
#
# 1. SequenceProducer sends BOOKIE_KILL_COUNT messages of BOOKIE_KILL_BYTES (chunked: 5 MiB
#    chunks, batching off), at most 2 in flight; after BOOKIE_KILL_AT are acknowledged it stops
#    sending and waits;
# 2. TopicLedgers names the open ledger's ensemble; its first bookie is SIGKILLed; the producer
#    goes on (its next chunk writes fail on the dead bookie: the client changes the ensemble);
# 3. every message must be acknowledged; TopicLedgers must show an ensemble change (a ledger with
#    two or more ensembles) whose last ensemble lacks the killed bookie;
# 4. the topic is unloaded and SequenceCheck reads all BOOKIE_KILL_COUNT messages back from the
#    bookies, in order, bytes (hence SHA-256) equal.

BOOKIE_KILL_COUNT=${BOOKIE_KILL_COUNT:-8}
BOOKIE_KILL_BYTES=${BOOKIE_KILL_BYTES:-10485760}
BOOKIE_KILL_AT=${BOOKIE_KILL_AT:-3}

# shellcheck source=../kill-common.sh
. "$PL_HERE/kill-common.sh"

scenario_bookie_kill() {
    local impl=$1 wire=$2 topic="persistent://public/default/bookie-kill-$wire" victim idx t
    pl_init || return 1
    echo "== bookie_kill: impl=$impl wire=$wire $BOOKIE_KILL_COUNT x $BOOKIE_KILL_BYTES bytes chunked, kill after $BOOKIE_KILL_AT, work dir $PL_DIR"
    pl_cluster_start "$impl" "$wire" 4 || return 1
    t=$(date +%s)
    PL_JAVA_OPTS="-Xmx1g -XX:MaxDirectMemorySize=1g" pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" \
        bookiers.pulsar.SequenceProducer "$PL_SERVICE_URL" "$topic" "$BOOKIE_KILL_COUNT" "$BOOKIE_KILL_BYTES" \
        --chunked --window 2 --pause-at "$BOOKIE_KILL_AT" --pause-file "$PL_DIR/killed"
    local producer=$PL_JAVA_PID
    kill_wait_line "$PL_DIR/driver.out" '^paused' "$producer" 300 || { tail -20 "$PL_DIR/driver.log"; return 1; }
    echo "  producer: $(grep -c '^acked' "$PL_DIR/driver.out") acknowledged, paused"
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-before.txt" || return 1
    victim=$(tail -1 "$PL_DIR/ledgers-before.txt" | grep -oE '\[[0-9]+:[^]]*\]$' | sed -E 's/^\[[0-9]+:([^,]*),.*/\1/')
    idx=$(pl_bookie_index "$victim") || { echo "  FAIL: no bookie of ours is '$victim'"; return 1; }
    kill -9 "${PL_BOOKIE_PID[$idx]}"
    wait "${PL_BOOKIE_PID[$idx]}" 2>/dev/null || true
    echo "  SIGKILL bookie $idx ($victim), of the open ledger's ensemble"
    touch "$PL_DIR/killed"
    kill_wait_exit "$producer" 600 || { echo "  FAIL: producer (log $PL_DIR/driver.log)"; tail -20 "$PL_DIR/driver.out"; tail -20 "$PL_DIR/driver.log"; return 1; }
    grep -q "^all-acked $BOOKIE_KILL_COUNT\$" "$PL_DIR/driver.out" || { echo "  FAIL: not every message acknowledged"; return 1; }
    echo "  producer: all $BOOKIE_KILL_COUNT acknowledged in $(($(date +%s) - t)) s"
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-after.txt" || return 1
    local changed
    changed=$(grep -E ' ensembles ([2-9]|[1-9][0-9]+) ' "$PL_DIR/ledgers-after.txt" | grep -vE "\[[0-9]+:[^]]*$victim[^]]*\]\$" | head -1)
    [ -n "$changed" ] || { echo "  FAIL: no ledger shows an ensemble change away from $victim"; return 1; }
    echo "  ensemble change: $(echo "$changed" | cut -d' ' -f1-2,7-)"
    kill_unload "$topic" || return 1
    kill_check "$topic" "$BOOKIE_KILL_BYTES" "$BOOKIE_KILL_COUNT" --exact "$BOOKIE_KILL_COUNT" || return 1
    SUMMARY="count=$BOOKIE_KILL_COUNT bytes=$BOOKIE_KILL_BYTES killed=bookie$idx ensemble-change=yes consumed=all-in-order-equal"
}
