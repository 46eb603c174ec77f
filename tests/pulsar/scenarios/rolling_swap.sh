# tests/pulsar/scenarios/rolling_swap.sh: scenario 9 of issue #16, the rolling swap an operator
# would do: a cluster on three stock Java bookies (ensemble / write / ack 3/3/2) has them replaced
# one at a time by bookies of IMPL (`--impl`: rust, the default, is the swap java -> bookie-rs;
# the impl column of expected-pass.txt names the replacements, the bookies replaced are always
# Java's) while a producer keeps producing; at the end no Java bookie is in any ledger's
# ensembles and every acknowledged message reads back in order with equal bytes. Sourced by
# tests/pulsar/run.sh (with launcher.sh and kill-common.sh).
#
# 1. ZooKeeper, metadata, Java bookies 0-2, the broker; SequenceProducer streams 1 KiB messages
#    (stock batching, ROLLING_SWAP_RATE a second, 64 in flight) to one topic;
# 2. for each Java bookie i in 0, 1, 2, once ROLLING_SWAP_AT more messages are acknowledged:
#    a. a new bookie 3+i of IMPL starts on empty directories (stock bk_server.conf keys, its admin
#       API on: httpServerEnabled=true, own httpServerPort) and must be registered;
#    b. Java bookie i gets SIGTERM (its shutdown closes its ZooKeeper session: unregistered at
#       once); the broker's next write to it fails and its BookKeeper client changes the open
#       ledger's ensemble to the new bookie (the only writable one outside it): TopicLedgers must
#       show the topic's last ensemble without bookie i;
#    c. `PUT /api/v1/autorecovery/bookie` {"bookie_src": ["<bookie i>"], "delete_cookie": true} on
#       the new bookie (docs/operations.md §2): every ledger listing bookie i is re-replicated
#       (the open data ledger's earlier ensembles; a ledger whose last ensemble lists it, e.g. an
#       idle system topic's, is fenced and closed first, as Java's recoverBookieData does);
#       AllLedgers (every ledger in the metadata store) must show none listing bookie i within
#       ROLLING_SWAP_GUARD_S;
#    d. a stock Reader (SequenceCheck) from earliest, while the producer goes on, must read at
#       least the messages acknowledged so far, in order, bytes equal;
# 3. producer stopped (SIGKILL: the acknowledged ones are its `acked` lines, 0..A-1); AllLedgers:
#    no ledger lists any of the three Java bookies in any ensemble; topic unloaded (reads come from
#    the bookies); SequenceCheck from earliest: messages 0..n-1 in order with equal bytes, n >= A.
#
# Not covered: a durable consumer (its cursor ledger) during the swaps (the readers of step 2d
# are non-durable); Java's auto-recovery daemon (the re-replication is asked by hand, as
# docs/operations.md §4 tells an operator); replacements on the replaced bookies' addresses.

ROLLING_SWAP_COUNT=${ROLLING_SWAP_COUNT:-1000000}
ROLLING_SWAP_BYTES=${ROLLING_SWAP_BYTES:-1024}
ROLLING_SWAP_RATE=${ROLLING_SWAP_RATE:-200}
ROLLING_SWAP_AT=${ROLLING_SWAP_AT:-1000}
ROLLING_SWAP_GUARD_S=${ROLLING_SWAP_GUARD_S:-120}

# shellcheck source=../kill-common.sh
. "$PL_HERE/kill-common.sh"

# swap_all_ledgers OUT: AllLedgers (every ledger of the metadata store) into OUT.
swap_all_ledgers() {
    PL_JAVA_OPTS="-Xmx256m" pl_java bookiers.pulsar.AllLedgers "zk+hierarchical://$PL_ZK/ledgers" \
        >"$1" 2>>"$PL_DIR/all-ledgers.log" \
        || { echo "  FAIL: AllLedgers (log $PL_DIR/all-ledgers.log)"; tail -20 "$PL_DIR/all-ledgers.log"; return 1; }
}

# swap_listing FILE BOOKIE..: the ledger lines of FILE that list any BOOKIE in an ensemble.
swap_listing() {
    local f=$1 b re=""; shift
    for b in "$@"; do re="$re${re:+|}${b//./\\.}"; done
    grep -E "[:,]($re)[],]" "$f" || true
}

# swap_registered ID: waits (60 s) until bookie ID is under /ledgers/available.
swap_registered() {
    for _ in $(seq 1 30); do
        java -cp "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar" \
            org.apache.zookeeper.ZooKeeperMain -server "$PL_ZK" ls /ledgers/available 2>/dev/null | grep -qF "$1" && return 0
        sleep 2
    done
    echo "  FAIL: bookie $1 not registered within 60 s"
    return 1
}

# swap_acked: the number of acknowledgements the producer printed.
swap_acked() { grep -c '^acked ' "$PL_DIR/driver.out" || true; }

scenario_rolling_swap() {
    local impl=$1 wire=$2 topic="persistent://public/default/rolling-swap-$wire" t t0 v2 i n victim hport
    local producer acked left ledgers java_ids=()
    v2=$([ "$wire" = v2 ] && echo true || echo false)
    pl_init || return 1
    echo "== rolling_swap: java -> $impl bookies, wire=$wire ${ROLLING_SWAP_BYTES}-byte messages at $ROLLING_SWAP_RATE/s, a swap every $ROLLING_SWAP_AT acknowledged, work dir $PL_DIR"
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    t=$(date +%s)
    for i in 0 1 2; do pl_java_bookie_start "$i" || return 1; java_ids+=("127.0.0.1:${PL_BOOKIE_PORT[$i]}"); done
    pl_bookies_registered 3 || return 1
    echo "  3 java bookies registered in $(($(date +%s) - t)) s: ${java_ids[*]}"
    t=$(date +%s)
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" || return 1
    echo "  broker ready in $(($(date +%s) - t)) s"
    PL_JAVA_OPTS="-Xmx512m" pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" \
        bookiers.pulsar.SequenceProducer "$PL_SERVICE_URL" "$topic" "$ROLLING_SWAP_COUNT" "$ROLLING_SWAP_BYTES" \
        --rate "$ROLLING_SWAP_RATE"
    producer=$PL_JAVA_PID
    for i in 0 1 2; do
        n=$(($(swap_acked) + ROLLING_SWAP_AT))
        kill_wait_line "$PL_DIR/driver.out" "^acked $((n - 1)) " "$producer" 300 || { tail -20 "$PL_DIR/driver.log"; return 1; }
        victim=${java_ids[$i]}
        echo "  -- swap $((i + 1)) of 3: java bookie $i ($victim), $(swap_acked) acknowledged"
        t0=$(date +%s)
        # a. the replacement, on empty directories (a new bookie id: new port, new cookie)
        hport=$(pl_free_port)
        # httpServerClass: what a Java replacement needs for its admin API (ours ignores it).
        pl_any_bookie_start "$impl" $((3 + i)) httpServerEnabled=true httpServerHost=127.0.0.1 \
            httpServerPort="$hport" httpServerClass=org.apache.bookkeeper.http.vertx.VertxHttpServer || return 1
        swap_registered "127.0.0.1:${PL_BOOKIE_PORT[$((3 + i))]}" || return 1
        echo "  $impl bookie $((3 + i)) (127.0.0.1:${PL_BOOKIE_PORT[$((3 + i))]}, admin :$hport) registered after $(($(date +%s) - t0)) s"
        # b. the Java bookie stopped as an operator stops it
        kill -TERM "${PL_BOOKIE_PID[$i]}"
        wait "${PL_BOOKIE_PID[$i]}" 2>/dev/null || true
        echo "  java bookie $i stopped (SIGTERM) after $(($(date +%s) - t0)) s"
        for ((t = 0; ; t++)); do
            kill_topic_ledgers "$topic" "$PL_DIR/topic-ledgers-$i.txt" >"$PL_DIR/topic-ledgers.out" \
                || { cat "$PL_DIR/topic-ledgers.out"; return 1; }
            tail -1 "$PL_DIR/topic-ledgers-$i.txt" | grep -oE '\[[0-9]+:[^]]*\]$' >"$PL_DIR/last-ensemble"
            [ -n "$(swap_listing "$PL_DIR/last-ensemble" "$victim")" ] || break
            [ "$t" -lt 30 ] || { echo "  FAIL: the topic's open ledger still writes to $victim"; tail -3 "$PL_DIR/topic-ledgers-$i.txt"; return 1; }
            sleep 1
        done
        echo "  open ledger's ensemble changed: $(tail -1 "$PL_DIR/topic-ledgers-$i.txt" | cut -d' ' -f1-2,7-)"
        # c. re-replication by the new bookie's admin API
        curl -sf -X PUT -H 'Content-Type: application/json' \
            -d "{\"bookie_src\": [\"$victim\"], \"delete_cookie\": true}" \
            "http://127.0.0.1:$hport/api/v1/autorecovery/bookie" >"$PL_DIR/recover-$i.out" \
            || { echo "  FAIL: PUT /api/v1/autorecovery/bookie on bookie $((3 + i))"; return 1; }
        echo "  recovery of $victim asked of bookie $((3 + i)): $(cat "$PL_DIR/recover-$i.out")"
        for ((t = 0; ; t++)); do
            swap_all_ledgers "$PL_DIR/all-ledgers-$i.txt" || return 1
            left=$(swap_listing "$PL_DIR/all-ledgers-$i.txt" "$victim" | wc -l)
            [ "$left" = 0 ] && break
            [ $(($(date +%s) - t0)) -lt "$ROLLING_SWAP_GUARD_S" ] || {
                echo "  FAIL: $left ledgers still list $victim after $ROLLING_SWAP_GUARD_S s"
                swap_listing "$PL_DIR/all-ledgers-$i.txt" "$victim" | sed 's/^/  ledgers: /'
                grep -iE "recover|replicat|fenc" "$PL_DIR/bookie$((3 + i)).log" | tail -10
                return 1
            }
            sleep 1
        done
        echo "  no ledger lists $victim ($(wc -l <"$PL_DIR/all-ledgers-$i.txt") ledgers) after $(($(date +%s) - t0)) s;" \
            "bookie $((3 + i)) log: $(grep -cE 'Recovered ledger [0-9]+' "$PL_DIR/bookie$((3 + i)).log" || true) ledgers recovered," \
            "$(grep -oE 'Complete recovering bookie|Exception occurred while recovering bookie.*' "$PL_DIR/bookie$((3 + i)).log" | tail -1)"
        # d. a reader from earliest while the stream goes on
        acked=$(swap_acked)
        kill_check "$topic" "$ROLLING_SWAP_BYTES" "$acked" || return 1
        kill -0 "$producer" 2>/dev/null || { echo "  FAIL: producer exited (log $PL_DIR/driver.log)"; tail -20 "$PL_DIR/driver.log"; return 1; }
    done
    kill -9 "$producer" 2>/dev/null || true
    wait "$producer" 2>/dev/null || true
    acked=$(swap_acked)
    [ "$(grep '^acked ' "$PL_DIR/driver.out" | tail -1 | cut -d' ' -f2)" = "$((acked - 1))" ] \
        || { echo "  FAIL: the producer's acked lines are not 0..$((acked - 1))"; return 1; }
    echo "  producer stopped with $acked acknowledged"
    # Before the unload: once the topic is reloaded with no subscription, retention 0 lets the
    # broker trim the ledger that holds the stream, after the check has read it.
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-after.txt" || return 1
    swap_all_ledgers "$PL_DIR/all-ledgers-after.txt" || return 1
    ledgers=$(wc -l <"$PL_DIR/all-ledgers-after.txt")
    left=$(swap_listing "$PL_DIR/all-ledgers-after.txt" "${java_ids[@]}")
    [ -z "$left" ] || { echo "  FAIL: ledgers still list a Java bookie:"; echo "$left" | sed 's/^/  ledgers: /'; return 1; }
    echo "  $ledgers ledgers in the metadata store, none lists a Java bookie in any ensemble"
    kill_unload "$topic" || return 1
    kill_check "$topic" "$ROLLING_SWAP_BYTES" "$acked" || return 1
    SUMMARY="acked=$acked bytes=$ROLLING_SWAP_BYTES swapped=3-java-to-$impl ledgers=$ledgers java-in-ensembles=none consumed=all-acked-in-order-equal"
}
