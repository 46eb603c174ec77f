# tests/pulsar/kill-common.sh: helpers of the kill scenarios (bookie_kill, broker_kill,
# all_kill), sourced by them. Each driver runs in the background (pl_java_bg) and every wait on it
# has a guard, so a broker that cannot write (or a bookie that does not come back) fails the run
# instead of hanging it.

# kill_wait_line FILE REGEX PID GUARD_S: waits until FILE has a line matching REGEX; fails when PID
# exits first or after GUARD_S seconds.
kill_wait_line() {
    local file=$1 re=$2 pid=$3 guard=$4 s
    for ((s = 0; s < guard * 5; s++)); do
        grep -qE "$re" "$file" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { grep -qE "$re" "$file" 2>/dev/null && return 0; echo "  FAIL: driver exited before '$re'"; return 1; }
        sleep 0.2
    done
    echo "  FAIL: no '$re' from the driver within $guard s"
    return 1
}

# kill_wait_exit PID GUARD_S: waits for a background driver to end; its exit status, or 1 (and
# the driver stopped) after GUARD_S seconds.
kill_wait_exit() {
    local pid=$1 guard=$2 s
    for ((s = 0; s < guard; s++)); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "  FAIL: driver still running after $guard s: stopped"
        kill "$pid" 2>/dev/null || true
    fi
    wait "$pid"
}

# kill_topic_ledgers TOPIC OUT: TopicLedgers (the topic's ledgers with their BookKeeper metadata)
# into OUT, shown indented.
kill_topic_ledgers() {
    PL_JAVA_OPTS="-Xmx256m" pl_java bookiers.pulsar.TopicLedgers "$PL_ADMIN_URL" \
        "zk+hierarchical://$PL_ZK/ledgers" "$1" >"$2" 2>>"$PL_DIR/topic-ledgers.log" \
        || { echo "  FAIL: TopicLedgers (log $PL_DIR/topic-ledgers.log)"; tail -20 "$PL_DIR/topic-ledgers.log"; return 1; }
    sed 's/^/  ledgers: /' "$2"
}

# kill_unload TOPIC: the admin API's unload (the broker's cache dropped; reads from the bookies).
kill_unload() {
    curl -sf -X PUT "$PL_ADMIN_URL/admin/v2/${1/:\/\//\/}/unload" >/dev/null \
        || { echo "  FAIL: unload of $1"; return 1; }
}

# kill_check TOPIC BYTES MIN [--exact N]: SequenceCheck from earliest; fails unless the numbered
# stream is complete and in order with at least MIN messages.
kill_check() {
    local topic=$1 bytes=$2 min=$3 ok=1; shift 3
    PL_JAVA_OPTS="-Xmx1g -XX:MaxDirectMemorySize=1g" pl_java bookiers.pulsar.SequenceCheck \
        "$PL_SERVICE_URL" "$topic" "$bytes" "$min" "$@" >"$PL_DIR/check.out" 2>"$PL_DIR/check.log" || ok=0
    sed 's/^/  check: /' "$PL_DIR/check.out"
    [ "$ok" = 1 ] || { echo "  FAIL: SequenceCheck (log $PL_DIR/check.log)"; tail -20 "$PL_DIR/check.log"; return 1; }
}
