# tests/pulsar/scenarios/full_ledger_disk.sh: scenario 7 of issue #16: the ledger disk of one
# bookie fills up mid-stream. The bookie must turn read-only (adds answered EREADONLY, reads still
# served), the broker's BookKeeper client must move the open ledger's writes to another bookie (an
# ensemble change), production must go on, and every acknowledged message must come back in order
# with equal bytes, also those the full bookie stored before it filled. Sourced by
# tests/pulsar/run.sh (with launcher.sh and kill-common.sh). Needs root and a free loop device.
#
# Cluster: ensemble / write / ack 3/3/2 (the suite's default) over 4 bookies, so one read-only
# bookie leaves 3 writable ones for a new ensemble. Bookie 0's ledger directory is an ext4 image
# of FULL_DISK_IMAGE_MB (512) MiB, loop-mounted (mkfs.ext4 -m 0, losetup, mount; unmounted and
# detached by pl_stop_all, also on failure); its journal stays on the normal disk. Every bookie,
# either implementation, gets the same stock keys: diskUsageThreshold=FULL_DISK_USAGE_THRESHOLD
# (0.95, the stock value, written out) and diskCheckInterval=1000 (stock 10 s; a shorter wait).
#
# 1. ZooKeeper, metadata, bookies 0-2, the broker; the topic is created (admin API) while only
#    those three exist, so its first ledger's ensemble holds bookie 0 for certain; then bookie 3;
# 2. SequenceProducer streams FULL_DISK_COUNT messages of FULL_DISK_BYTES (batching off: one entry
#    each), FULL_DISK_RATE a second, 64 in flight;
# 3. once FULL_DISK_AT are acknowledged, a ballast file (fallocate) takes all of bookie 0's free
#    space but FULL_DISK_LEAVE_MB (4): past diskUsageThreshold, the producer still running;
# 4. bookie 0 must turn read-only within FULL_DISK_RO_GUARD_S (30) s: bookie_SERVER_STATUS 0 and
#    its node under /ledgers/available/readonly;
# 5. every message acknowledged; TopicLedgers must show the ledger whose first ensemble held
#    bookie 0 with a later ensemble without it; the broker's log must have the new ensemble
#    (LedgerHandle "New Ensemble"), which with the first add refused as read-only gives the times;
# 6. topic unloaded, SequenceCheck reads exactly FULL_DISK_COUNT messages from the bookies, in
#    order, bytes equal (the first ensemble's entries are also on bookie 0; whether the broker's
#    reads went to it is chance, its bookie_READ_BYTES are shown); bookie 0 must still be read-only;
# 7. the ballast removed: bookie 0 must turn writable again (status 1, its node back under
#    /ledgers/available, not readonly) within FULL_DISK_RW_GUARD_S (60) s.
# Prints the times from the fill to read-only, to the ensemble change, to writable again, and the
# messages acknowledged before the fill, between the fill and read-only, and after.
# Shown to fail: FULL_DISK_EXTRA=readOnlyModeEnabled=false (a full disk stops the bookie instead)
# fails step 4 ("bookie 0 exited on the full disk"). With FULL_DISK_USAGE_THRESHOLD=0.9999 the
# ballast alone is not "full"; our bookie still turned read-only ~14 s later, when the 4 MiB left
# ran out (no room for a segment), and the run passed.

FULL_DISK_IMAGE_MB=${FULL_DISK_IMAGE_MB:-512}
FULL_DISK_LEAVE_MB=${FULL_DISK_LEAVE_MB:-4}
FULL_DISK_USAGE_THRESHOLD=${FULL_DISK_USAGE_THRESHOLD:-0.95}
FULL_DISK_COUNT=${FULL_DISK_COUNT:-6000}
FULL_DISK_BYTES=${FULL_DISK_BYTES:-1024}
FULL_DISK_RATE=${FULL_DISK_RATE:-200}
FULL_DISK_AT=${FULL_DISK_AT:-1500}
FULL_DISK_RO_GUARD_S=${FULL_DISK_RO_GUARD_S:-30}
FULL_DISK_RW_GUARD_S=${FULL_DISK_RW_GUARD_S:-60}
# Extra bookie keys, space-separated (for the failure runs, e.g. readOnlyModeEnabled=false).
FULL_DISK_EXTRA=${FULL_DISK_EXTRA:-}

# shellcheck source=../kill-common.sh
. "$PL_HERE/kill-common.sh"

# fd_mount DIR: an ext4 image of FULL_DISK_IMAGE_MB MiB loop-mounted on DIR; pl_stop_all undoes it.
fd_mount() {
    local dir=$1 img="$PL_DIR/ledger-disk.img" dev
    mkdir -p "$dir"
    truncate -s "${FULL_DISK_IMAGE_MB}M" "$img" && mkfs.ext4 -q -F -m 0 "$img" \
        || { echo "  FAIL: mkfs.ext4 $img"; return 1; }
    dev=$(losetup -f --show "$img") || { echo "  FAIL: losetup (root and a free loop device needed)"; return 1; }
    PL_CLEANUP+=("losetup -d $dev 2>/dev/null; rm -f $img")
    mount "$dev" "$dir" || { echo "  FAIL: mount $dev $dir"; return 1; }
    PL_CLEANUP+=("umount -l $dir")
    FD_DEV=$dev
}

# fd_status I: bookie I's bookie_SERVER_STATUS (1 writable, 0 read-only), or "?".
fd_status() {
    curl -sf "${PL_BOOKIE_METRICS[$1]}" | awk '/^bookie_SERVER_STATUS[ {]/ { printf "%d", $NF; f = 1; exit } END { if (!f) print "?" }'
}

# fd_read_bytes I: bookie I's bookie_READ_BYTES counter (either implementation), or 0.
fd_read_bytes() {
    curl -sf "${PL_BOOKIE_METRICS[$1]}" | awk '/^bookie_READ_BYTES[ {]/ { printf "%d", $NF; f = 1; exit } END { if (!f) print 0 }'
}

# fd_zk_ls PATH: the children of PATH in ZooKeeper.
fd_zk_ls() {
    java -cp "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar" \
        org.apache.zookeeper.ZooKeeperMain -server "$PL_ZK" ls "$1" 2>/dev/null | grep -o '127\.0\.0\.1:[0-9]*' | sort -u
}

# fd_since T0_MS: seconds since T0_MS (epoch ms), one decimal.
fd_since() {
    local ms=$(($(date +%s%3N) - $1))
    printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# fd_log_time REGEX T0_CLOCK: seconds from T0_CLOCK (HH:MM:SS.mmm) to the broker log's first line
# matching REGEX (its log4j time stamp), or "?".
fd_log_time() {
    local line
    line=$(grep -m1 -E "$1" "$PL_DIR/broker.log") || { echo "?"; return 0; }
    python3 -c 'import sys
def ms(t):
    h, m, s = t.split(":"); return (int(h) * 3600 + int(m) * 60 + float(s)) * 1000
print("%.2f" % ((ms(sys.argv[2]) - ms(sys.argv[1])) / 1000))' "$2" "${line%% *}"
}

fd_acked() { grep -c '^acked' "$PL_DIR/driver.out" 2>/dev/null || true; }

scenario_full_ledger_disk() {
    local impl=$1 wire=$2 topic="persistent://public/default/full-ledger-disk-$wire" v2 i t0 now
    local keys=(diskUsageThreshold="$FULL_DISK_USAGE_THRESHOLD" diskCheckInterval=1000)
    # shellcheck disable=SC2206
    [ -z "$FULL_DISK_EXTRA" ] || keys+=($FULL_DISK_EXTRA)
    v2=$([ "$wire" = v2 ] && echo true || echo false)
    pl_init || return 1
    echo "== full_ledger_disk: impl=$impl wire=$wire $FULL_DISK_COUNT x $FULL_DISK_BYTES bytes at $FULL_DISK_RATE/s," \
        "bookie 0's ${FULL_DISK_IMAGE_MB} MiB ledger disk filled after $FULL_DISK_AT, work dir $PL_DIR"
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    fd_mount "$PL_DIR/bookie0/ledgers" || return 1
    echo "  bookie 0's ledger directory: $FD_DEV, $(df -B1 --output=size,avail "$PL_DIR/bookie0/ledgers" | tail -1 | awk '{print $1 " bytes, " $2 " free"}')"
    for i in 0 1 2; do pl_any_bookie_start "$impl" "$i" "${keys[@]}" || return 1; done
    pl_bookies_registered 3 || return 1
    pl_broker_start "bookkeeperUseV2WireProtocol=$v2" || return 1
    # The topic (and its first ledger) while only bookies 0-2 exist: bookie 0 is in its ensemble.
    curl -sf -X PUT "$PL_ADMIN_URL/admin/v2/${topic/:\/\//\/}" >/dev/null || { echo "  FAIL: creating $topic"; return 1; }
    pl_any_bookie_start "$impl" 3 "${keys[@]}" || return 1
    pl_bookies_registered 4 || return 1
    echo "  4 $impl bookies, broker ready, topic created over bookies 0-2"
    local full="127.0.0.1:${PL_BOOKIE_PORT[0]}"
    [ "$(fd_status 0)" = 1 ] || { echo "  FAIL: bookie 0 not writable at the start (status $(fd_status 0))"; return 1; }

    # 2. The stream.
    PL_JAVA_OPTS="-Xmx512m" pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" \
        bookiers.pulsar.SequenceProducer "$PL_SERVICE_URL" "$topic" "$FULL_DISK_COUNT" "$FULL_DISK_BYTES" \
        --no-batching --window 64 --rate "$FULL_DISK_RATE"
    local producer=$PL_JAVA_PID
    kill_wait_line "$PL_DIR/driver.out" "^acked $((FULL_DISK_AT - 1)) " "$producer" 300 || { tail -20 "$PL_DIR/driver.log"; return 1; }

    # 3. Fill bookie 0's ledger disk under the running stream.
    local avail ballast="$PL_DIR/bookie0/ledgers/ballast" a_fill a_ro t_ro="" t_node="" st
    avail=$(df -B1 --output=avail "$PL_DIR/bookie0/ledgers" | tail -1 | tr -d ' ')
    fallocate -l $((avail - FULL_DISK_LEAVE_MB * 1048576)) "$ballast" || { echo "  FAIL: fallocate ballast"; return 1; }
    t0=$(date +%s%3N)
    local t0_clock
    t0_clock=$(date -d "@${t0:0:10}.${t0:10}" +%H:%M:%S.%3N)
    a_fill=$(fd_acked)
    echo "  t0 ($t0_clock): ballast of $((avail - FULL_DISK_LEAVE_MB * 1048576)) bytes; $a_fill acknowledged;" \
        "disk now $(df --output=pcent "$PL_DIR/bookie0/ledgers" | tail -1 | tr -d ' ') used"

    # 4. Read-only: status 0, then the read-only registration node.
    while [ $(($(date +%s%3N) - t0)) -lt $((FULL_DISK_RO_GUARD_S * 1000)) ]; do
        st=$(fd_status 0)
        if [ -z "$t_ro" ] && [ "$st" = 0 ]; then t_ro=$(fd_since "$t0"); a_ro=$(fd_acked); echo "  $t_ro s: bookie 0 bookie_SERVER_STATUS 0 (read-only); $a_ro acknowledged"; fi
        if [ -n "$t_ro" ] && fd_zk_ls /ledgers/available/readonly | grep -qx "$full"; then
            t_node=$(fd_since "$t0"); echo "  $t_node s: /ledgers/available/readonly/$full present"; break
        fi
        kill -0 "${PL_BOOKIE_PID[0]}" 2>/dev/null || { echo "  FAIL: bookie 0 exited on the full disk"; tail -20 "$PL_DIR/bookie0.log"; return 1; }
        sleep 0.5
    done
    [ -n "$t_ro" ] || { echo "  FAIL: bookie 0 not read-only within $FULL_DISK_RO_GUARD_S s of the fill (status $(fd_status 0))"; return 1; }
    [ -n "$t_node" ] || { echo "  FAIL: no read-only registration node for $full within $FULL_DISK_RO_GUARD_S s"; return 1; }

    # 5. Production goes on and ends; the ensemble changed away from bookie 0.
    kill_wait_exit "$producer" 300 || { echo "  FAIL: producer (log $PL_DIR/driver.log)"; tail -20 "$PL_DIR/driver.out"; tail -20 "$PL_DIR/driver.log"; return 1; }
    grep -q "^all-acked $FULL_DISK_COUNT\$" "$PL_DIR/driver.out" || { echo "  FAIL: not every message acknowledged"; return 1; }
    echo "  producer: all $FULL_DISK_COUNT acknowledged, $((FULL_DISK_COUNT - a_ro)) of them after bookie 0 turned read-only"
    kill_topic_ledgers "$topic" "$PL_DIR/ledgers-after.txt" || return 1
    local changed
    changed=$(grep -E ' ensembles ([2-9]|[1-9][0-9]+) ' "$PL_DIR/ledgers-after.txt" | grep -E "\[0:[^]]*$full" \
        | grep -vE "\[[0-9]+:[^]]*$full[^]]*\]\$" | head -1)
    [ -n "$changed" ] || { echo "  FAIL: no ledger whose first ensemble held $full shows an ensemble change away from it"; return 1; }
    echo "  ensemble change: $(echo "$changed" | cut -d' ' -f1-2,7-)"
    # When: the broker's BookKeeper client logs the first add refused as read-only and the new
    # ensemble (LedgerHandle "New Ensemble: [..] for ledger: N").
    local t_refused t_change
    t_refused=$(fd_log_time 'PendingAddOp - Failed to write entry .*ReadOnly' "$t0_clock")
    t_change=$(fd_log_time 'LedgerHandle - New Ensemble: .* for ledger' "$t0_clock")
    echo "  broker's log: first add refused as read-only at $t_refused s, new ensemble at $t_change s (after t0)"
    [ "$t_change" != "?" ] || { echo "  FAIL: no 'New Ensemble' line in the broker's log"; return 1; }

    # 6. Everything back from the bookies, bookie 0 included.
    kill_unload "$topic" || return 1
    local rb0
    rb0=$(fd_read_bytes 0)
    kill_check "$topic" "$FULL_DISK_BYTES" "$FULL_DISK_COUNT" --exact "$FULL_DISK_COUNT" || return 1
    # The broker's client reads each ledger from one bookie of its ensemble, picked at random
    # (BookKeeper's sticky reads, on in Pulsar): whether that was bookie 0 is chance, so its read
    # bytes are shown, not required.
    echo "  bookie 0 (read-only) served $(($(fd_read_bytes 0) - rb0)) bytes of reads during the check"
    st=$(fd_status 0)
    [ "$st" = 0 ] || { echo "  FAIL: bookie 0 left read-only before the ballast went (status $st)"; return 1; }

    # 7. Space back: writable again.
    rm -f "$ballast"
    local t1 t_rw=""
    t1=$(date +%s%3N)
    while [ $(($(date +%s%3N) - t1)) -lt $((FULL_DISK_RW_GUARD_S * 1000)) ]; do
        if [ "$(fd_status 0)" = 1 ] && fd_zk_ls /ledgers/available | grep -qx "$full" \
            && ! fd_zk_ls /ledgers/available/readonly | grep -qx "$full"; then
            t_rw=$(fd_since "$t1"); break
        fi
        sleep 0.5
    done
    [ -n "$t_rw" ] || { echo "  FAIL: bookie 0 not writable again within $FULL_DISK_RW_GUARD_S s of the ballast's removal (status $(fd_status 0))"; return 1; }
    echo "  $t_rw s after the ballast went: bookie 0 writable (status 1, registered writable again)"
    SUMMARY="count=$FULL_DISK_COUNT acked_at_fill=$a_fill acked_at_readonly=$a_ro readonly=${t_ro}s node=${t_node}s"
    SUMMARY="$SUMMARY first_ereadonly=${t_refused}s ensemble_change=${t_change}s writable_again=${t_rw}s consumed=all-in-order-equal"
}
