# tests/pulsar/scenarios/retention_gc.sh: scenario 6 of issue #16: messages past retention are
# trimmed by the broker, their ledgers deleted from the metadata store, and the bookies' GC gives
# the disk space back, while ledgers a subscription still needs stay readable. Three bookies,
# 3/3/2 (every bookie holds every entry). Sourced by tests/pulsar/run.sh (with launcher.sh and
# kill-common.sh).
#
# Broker: retention 0 (the stock defaultRetentionTimeInMinutes / defaultRetentionSizeInMB, written
# out), managedLedgerMaxEntriesPerLedger=RETENTION_GC_PER_LEDGER with
# managedLedgerMinLedgerRolloverTimeMinutes=0 (a ledger every so many entries), and
# retentionCheckIntervalInSeconds=5 (the broker's trim of consumed ledgers every 5 s instead of 120).
# Bookies: DbLedgerStorage (64 / 16 MiB caches), gcWaitTime=RETENTION_GC_GC_WAIT_MS (2 s),
# flushInterval=1000, logSizeLimit=16 MiB (Java's GC removes only entry logs it has rotated away
# from; with the stock 1 GiB the whole run would sit in its current log).
#
# 1. topic `kept` with a durable subscription `keep` (created before any message): KEPT_COUNT
#    messages, never acknowledged, so the broker must keep them;
# 2. topic `trimmed` with a durable subscription `hold`: TRIM_COUNT messages (batching off, one
#    entry each), then the topic unloaded (its last ledger closed; the next load opens a new one);
# 3. "before": each bookie's ledger-directory bytes (du, allocated) once the flushes settle;
# 4. subscription `hold` deleted at t0: nothing holds `trimmed` any more, and with retention 0
#    the broker trims its ledgers at its next retention check and deletes them (metadata);
# 5. every second or so until RETENTION_GC_GUARD_S: the topic's ledger list, the trimmed ledgers' metadata
#    (LedgersPresent), each bookie's ledger-directory bytes;
# 6. must hold (else FAIL): every ledger of `trimmed` but its current one gone from the topic and
#    absent from metadata; on every bookie, the ledger directories at least RETENTION_GC_MIN_PCT
#    (60) % of `trimmed`'s payload smaller than before; `kept`'s ledgers present and SequenceCheck
#    reads exactly KEPT_COUNT messages of it, in order, bytes equal (GC deleted nothing live).
# Prints the time to trim, to delete from metadata (an upper bound: each look starts a JVM, a few
# seconds), and to reclaim (each bookie; from a 0.5 s trace of du, $PL_DIR/bytes.trace), and the
# bytes before and after.
# With the bookies' GC off in effect (RETENTION_GC_GC_WAIT_MS=3600000) it must FAIL at step 6.

RETENTION_GC_BYTES=${RETENTION_GC_BYTES:-524288}
RETENTION_GC_TRIM_COUNT=${RETENTION_GC_TRIM_COUNT:-160}
RETENTION_GC_KEPT_COUNT=${RETENTION_GC_KEPT_COUNT:-40}
RETENTION_GC_PER_LEDGER=${RETENTION_GC_PER_LEDGER:-16}
RETENTION_GC_GC_WAIT_MS=${RETENTION_GC_GC_WAIT_MS:-2000}
RETENTION_GC_GUARD_S=${RETENTION_GC_GUARD_S:-180}
RETENTION_GC_MIN_PCT=${RETENTION_GC_MIN_PCT:-60}

# shellcheck source=../kill-common.sh
. "$PL_HERE/kill-common.sh"

# rgc_ledgers TOPIC: the ledger ids of TOPIC's managed ledger, comma-separated (admin API).
rgc_ledgers() {
    curl -sf "$PL_ADMIN_URL/admin/v2/${1/:\/\//\/}/internalStats" \
        | python3 -c 'import json, sys; print(",".join(str(l["ledgerId"]) for l in json.load(sys.stdin)["ledgers"]))'
}

# rgc_since T0_MS: seconds since T0_MS (epoch ms), one decimal.
rgc_since() {
    local ms=$(($(date +%s%3N) - $1))
    printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# rgc_bytes I: allocated bytes under bookie I's ledger directory.
rgc_bytes() {
    du -s --block-size=1 "$PL_DIR/bookie$1/ledgers" | cut -f1
}

# rgc_present IDS: LedgersPresent's lines for IDS (comma-separated), or a failure.
rgc_present() {
    PL_JAVA_OPTS="-Xmx128m" pl_java bookiers.pulsar.LedgersPresent "zk+hierarchical://$PL_ZK/ledgers" "$1" \
        2>>"$PL_DIR/ledgers-present.log"
}

scenario_retention_gc() {
    local impl=$1 wire=$2 v2 i t0 now trimmed kept
    local topic_t="persistent://public/default/retention-gc-trimmed-$wire"
    local topic_k="persistent://public/default/retention-gc-kept-$wire"
    v2=$([ "$wire" = v2 ] && echo true || echo false)
    pl_init || return 1
    echo "== retention_gc: impl=$impl wire=$wire trimmed $RETENTION_GC_TRIM_COUNT + kept $RETENTION_GC_KEPT_COUNT" \
        "x $RETENTION_GC_BYTES bytes, $RETENTION_GC_PER_LEDGER entries per ledger, gcWaitTime $RETENTION_GC_GC_WAIT_MS ms, work dir $PL_DIR"
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    for i in 0 1 2; do
        pl_any_bookie_start "$impl" "$i" ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage \
            dbStorage_writeCacheMaxSizeMb=64 dbStorage_readAheadCacheMaxSizeMb=16 \
            gcWaitTime="$RETENTION_GC_GC_WAIT_MS" flushInterval=1000 logSizeLimit=16777216 || return 1
    done
    pl_bookies_registered 3 || return 1
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" defaultRetentionTimeInMinutes=0 defaultRetentionSizeInMB=0 \
        managedLedgerMaxEntriesPerLedger="$RETENTION_GC_PER_LEDGER" managedLedgerMinLedgerRolloverTimeMinutes=0 \
        retentionCheckIntervalInSeconds=5 || return 1
    echo "  3 $impl bookies, broker ready"

    # 1-2. Both topics with their durable subscriptions first, then the messages.
    local tsub path
    for tsub in "$topic_k keep" "$topic_t hold"; do
        path=${tsub% *}; path=${path/:\/\//\/}
        curl -sf -X PUT "$PL_ADMIN_URL/admin/v2/$path" >/dev/null \
            && curl -sf -X PUT "$PL_ADMIN_URL/admin/v2/$path/subscription/${tsub#* }" >/dev/null \
            || { echo "  FAIL: creating ${tsub% *} and its subscription ${tsub#* }"; return 1; }
    done
    local spec tp cnt name
    for spec in "$topic_k $RETENTION_GC_KEPT_COUNT kept" "$topic_t $RETENTION_GC_TRIM_COUNT trimmed"; do
        read -r tp cnt name <<<"$spec"
        PL_JAVA_OPTS="-Xmx512m" pl_java_bg "$PL_DIR/producer-$name.out" "$PL_DIR/producer-$name.log" \
            bookiers.pulsar.SequenceProducer "$PL_SERVICE_URL" "$tp" "$cnt" "$RETENTION_GC_BYTES" --no-batching --window 8
        kill_wait_exit "$PL_JAVA_PID" 300 || { echo "  FAIL: producer of $name"; tail -20 "$PL_DIR/producer-$name.log"; return 1; }
        grep -q "^all-acked $cnt\$" "$PL_DIR/producer-$name.out" || { echo "  FAIL: not every message of $name acknowledged"; return 1; }
    done
    kill_unload "$topic_t" || return 1
    trimmed=$(rgc_ledgers "$topic_t") && kept=$(rgc_ledgers "$topic_k") || { echo "  FAIL: internalStats"; return 1; }
    echo "  produced: kept $RETENTION_GC_KEPT_COUNT (ledgers $kept), trimmed $RETENTION_GC_TRIM_COUNT (ledgers $trimmed); trimmed unloaded"

    # 3. Before: once no bookie's ledger directory has grown for 3 s (the flushes have settled).
    local -a before after reclaimed_at
    local prev="" cur s
    for ((s = 0; s < 60; s++)); do
        cur=$(for i in 0 1 2; do rgc_bytes "$i"; done | tr '\n' ' ')
        [ "$cur" = "$prev" ] && [ "$s" -ge 3 ] && break
        prev=$cur
        sleep 1
    done
    read -r -a before <<<"$cur"
    local payload=$((RETENTION_GC_TRIM_COUNT * RETENTION_GC_BYTES)) need=$((RETENTION_GC_TRIM_COUNT * RETENTION_GC_BYTES * RETENTION_GC_MIN_PCT / 100))
    echo "  before: ledger dirs ${before[0]} / ${before[1]} / ${before[2]} bytes (trimmed payload $payload bytes; must reclaim >= $need each)"

    # 4. Nothing holds `trimmed` any more.
    curl -sf -X DELETE "$PL_ADMIN_URL/admin/v2/${topic_t/:\/\//\/}/subscription/hold" >/dev/null \
        || { echo "  FAIL: deleting subscription hold"; return 1; }
    t0=$(date +%s%3N)
    echo "  t0: subscription hold deleted"
    # The bytes every 0.5 s, apart from the slower polls below (a LedgersPresent JVM takes
    # seconds), so the reclaim time is the disk's, not the poll's: "ms b0 b1 b2" lines.
    (while :; do
        echo "$(($(date +%s%3N) - t0)) $(rgc_bytes 0) $(rgc_bytes 1) $(rgc_bytes 2)"
        sleep 0.5
    done) >"$PL_DIR/bytes.trace" 2>/dev/null &
    local sampler=$!
    PL_PIDS+=("$sampler")

    # 5. Poll: trim (topic's ledger list), metadata deletion, reclaim per bookie.
    local t_trim="" t_meta="" left gone_ids absent ok_all
    local first_trimmed=${trimmed%,*} # all but the last ledger listed (the one the reload opened)
    while [ $(($(date +%s%3N) - t0)) -lt $((RETENTION_GC_GUARD_S * 1000)) ]; do
        left=$(rgc_ledgers "$topic_t") || left="?"
        now=$(rgc_since "$t0")
        if [ -z "$t_trim" ] && [ "$left" != "?" ]; then
            gone_ids=1
            for id in ${first_trimmed//,/ }; do [[ ",$left," == *",$id,"* ]] && gone_ids=0; done
            [ "$gone_ids" = 1 ] && { t_trim=$now; echo "  $now s: trimmed by the broker: the topic's ledgers now $left"; }
        fi
        if [ -n "$t_trim" ] && [ -z "$t_meta" ]; then
            absent=$(rgc_present "$first_trimmed") || { echo "  FAIL: LedgersPresent (log $PL_DIR/ledgers-present.log)"; return 1; }
            now=$(rgc_since "$t0")
            if ! grep -q ' present$' <<<"$absent"; then t_meta=$now; echo "  $now s: ledgers $first_trimmed absent from metadata"; fi
        fi
        ok_all=1
        for i in 0 1 2; do
            after[$i]=$(rgc_bytes "$i")
            now=$(rgc_since "$t0")
            if [ -z "${reclaimed_at[$i]:-}" ] && [ $((before[i] - after[i])) -ge "$need" ]; then
                reclaimed_at[$i]=$now
                echo "  $now s: bookie $i reclaimed $((before[i] - after[i])) bytes (${before[i]} -> ${after[i]})"
            fi
            [ -n "${reclaimed_at[$i]:-}" ] || ok_all=0
        done
        [ -n "$t_meta" ] && [ "$ok_all" = 1 ] && break
        sleep 1
    done
    sleep 2 # one more GC round, so "after" is the settled figure
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    # The first sample at which each bookie had reclaimed enough (the trace's resolution).
    for i in 0 1 2; do
        [ -n "${reclaimed_at[$i]:-}" ] || continue
        reclaimed_at[$i]=$(awk -v c=$((i + 2)) -v b="${before[$i]}" -v n="$need" \
            'b - $c >= n { printf "%.1f", $1 / 1000; exit }' "$PL_DIR/bytes.trace")
        reclaimed_at[$i]=${reclaimed_at[$i]:-?}
    done
    echo "  reclaimed enough at (0.5 s samples): bookie 0 ${reclaimed_at[0]:--} s, bookie 1 ${reclaimed_at[1]:--} s, bookie 2 ${reclaimed_at[2]:--} s"
    for i in 0 1 2; do after[$i]=$(rgc_bytes "$i"); done
    echo "  after ($(rgc_since "$t0") s): ledger dirs ${after[0]} / ${after[1]} / ${after[2]} bytes;" \
        "reclaimed $((before[0] - after[0])) / $((before[1] - after[1])) / $((before[2] - after[2]))"

    # 6. The verdict, then what must not have been touched.
    local fail=0
    [ -n "$t_trim" ] || { echo "  FAIL: the broker did not trim $first_trimmed within $RETENTION_GC_GUARD_S s (ledgers now $left)"; fail=1; }
    [ -z "$t_trim" ] || [ -n "$t_meta" ] || { echo "  FAIL: trimmed ledgers still in metadata: $(grep ' present$' <<<"$absent" | tr '\n' ' ')"; fail=1; }
    for i in 0 1 2; do
        [ -n "${reclaimed_at[$i]:-}" ] \
            || { echo "  FAIL: bookie $i reclaimed $((before[i] - after[i])) bytes within $RETENTION_GC_GUARD_S s, wanted >= $need"; fail=1; }
    done
    absent=$(rgc_present "$kept") || { echo "  FAIL: LedgersPresent on kept"; return 1; }
    grep -q ' absent$' <<<"$absent" && { echo "  FAIL: a ledger of kept was deleted: $(grep ' absent$' <<<"$absent" | tr '\n' ' ')"; fail=1; }
    kill_unload "$topic_k" || return 1
    kill_check "$topic_k" "$RETENTION_GC_BYTES" "$RETENTION_GC_KEPT_COUNT" --exact "$RETENTION_GC_KEPT_COUNT" || fail=1
    [ "$fail" = 0 ] || return 1
    SUMMARY="trimmed=$first_trimmed trim=${t_trim}s metadata=${t_meta}s reclaim=${reclaimed_at[0]}/${reclaimed_at[1]}/${reclaimed_at[2]}s"
    SUMMARY="$SUMMARY bytes_before=${before[0]}/${before[1]}/${before[2]} after=${after[0]}/${after[1]}/${after[2]} kept=$RETENTION_GC_KEPT_COUNT-in-order-equal"
}
