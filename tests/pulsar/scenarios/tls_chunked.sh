# tests/pulsar/scenarios/tls_chunked.sh: scenario 8 of issue #16 with scenario 2's payloads: a
# stock Pulsar broker over three TLS bookies with mutual TLS and BookieAuthZFactory, chunked 10 MiB
# and 100 MiB messages produced, the topic unloaded, both consumed back from the bookies with
# equal SHA-256. Sourced by tests/pulsar/run.sh (with launcher.sh and tls-certs.sh).
#
# TLS is proven two ways: (1) before the broker starts, BookieTlsProbe shows that a plaintext
# BookKeeper client is refused by the bookies (EUA on its add) while the same client with the
# broker's keys adds and reads, so a broker that stores anything must have used TLS with its
# certificate; (2) for our bookie, every bookie logs "TLS connection authorized" with principal
# `pulsar` for connections the broker opened (counted after the probe).
#
# Every key below is a stock one: bk_server.conf for the bookies (either implementation takes
# the same file), broker.conf's bookkeeperTLS* for the broker (Pulsar 4.0.7 ServiceConfiguration;
# BookKeeperClientFactoryImpl copies them into the client only when
# bookkeeperTLSClientAuthentication=true).

TLS_CHUNKED_SIZES=${TLS_CHUNKED_SIZES:-10485760,104857600}

# tls_authorized_count I: how many connections our bookie I has logged as authorized for role pulsar.
tls_authorized_count() {
    grep -c 'TLS connection authorized.*pulsar' "$PL_DIR/bookie$1.log" || true
}

scenario_tls_chunked() {
    local impl=$1 wire=$2 certs i t out before=() n ok=1
    pl_init || return 1
    echo "== tls_chunked: impl=$impl wire=$wire sizes=$TLS_CHUNKED_SIZES work dir $PL_DIR"
    certs="$PL_DIR/tls"
    pl_tls_certs "$certs" 3 || return 1
    pl_zk_start || return 1
    pl_metadata_setup || return 1
    t=$(date +%s)
    for i in 0 1 2; do
        pl_any_bookie_start "$impl" "$i" \
            tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory \
            tlsKeyStoreType=PEM "tlsKeyStore=$certs/bookie$i.key" "tlsCertificatePath=$certs/bookie$i.crt" \
            tlsTrustStoreType=PEM "tlsTrustStore=$certs/ca.crt" tlsClientAuthentication=true \
            bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory authorizedRoles=pulsar \
            ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage \
            dbStorage_writeCacheMaxSizeMb=64 dbStorage_readAheadCacheMaxSizeMb=16 \
            || return 1
    done
    pl_bookies_registered 3 || return 1
    echo "  3 $impl bookies with TLS + BookieAuthZFactory registered in $(($(date +%s) - t)) s"

    # (1) plaintext refused, the broker's keys accepted.
    out=$(PL_JAVA_OPTS="-Xmx256m" pl_java bookiers.pulsar.BookieTlsProbe "zk+hierarchical://$PL_ZK/ledgers" \
        "$wire" "$certs/broker.key" "$certs/broker.crt" "$certs/ca.crt" 2>"$PL_DIR/probe.log") || ok=0
    echo "$out" | sed 's/^/  probe: /'
    [ "$ok" = 1 ] || { echo "  FAIL: TLS probe (log $PL_DIR/probe.log)"; tail -20 "$PL_DIR/probe.log"; return 1; }
    if [ "$impl" = rust ]; then
        for i in 0 1 2; do before[$i]=$(tls_authorized_count "$i"); done
    fi

    t=$(date +%s)
    pl_broker_start bookkeeperTLSClientAuthentication=true \
        bookkeeperTLSProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory \
        bookkeeperTLSKeyFileType=PEM "bookkeeperTLSKeyFilePath=$certs/broker.key" \
        "bookkeeperTLSCertificateFilePath=$certs/broker.crt" \
        bookkeeperTLSTrustCertTypes=PEM "bookkeeperTLSTrustCertsFilePath=$certs/ca.crt" \
        "bookkeeperUseV2WireProtocol=$([ "$wire" = v2 ] && echo true || echo false)" \
        || return 1
    echo "  broker ready in $(($(date +%s) - t)) s"

    # The producer's sendTimeout is 0 (no limit), so a broker that cannot write to the bookies
    # would hang the driver: a hang guard of TLS_CHUNKED_GUARD_S (600 s; a pass takes < 60 s).
    t=$(date +%s)
    PL_JAVA_OPTS="-Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g" \
        pl_java_bg "$PL_DIR/driver.out" "$PL_DIR/driver.log" bookiers.pulsar.ChunkedRoundTrip \
        "$PL_SERVICE_URL" "$PL_ADMIN_URL" "persistent://public/default/tls-chunked-$wire" "$TLS_CHUNKED_SIZES"
    for _ in $(seq 1 "${TLS_CHUNKED_GUARD_S:-600}"); do kill -0 "$PL_JAVA_PID" 2>/dev/null || break; sleep 1; done
    if kill -0 "$PL_JAVA_PID" 2>/dev/null; then
        echo "  driver still running after ${TLS_CHUNKED_GUARD_S:-600} s: stopped"
        kill "$PL_JAVA_PID" 2>/dev/null || true
    fi
    wait "$PL_JAVA_PID" || ok=0
    sed 's/^/  /' "$PL_DIR/driver.out"
    local want got_equal
    want=$(echo "$TLS_CHUNKED_SIZES" | tr ',' '\n' | wc -l)
    got_equal=$(grep -c '^sha256 .* equal$' "$PL_DIR/driver.out" || true)
    if [ "$ok" != 1 ] || [ "$got_equal" != "$want" ]; then
        echo "  FAIL: round trip ($got_equal of $want messages equal; log $PL_DIR/driver.log)"
        tail -30 "$PL_DIR/driver.log"
        return 1
    fi
    echo "  round trip: $want messages equal in $(($(date +%s) - t)) s"

    # (2) our bookies saw the broker's TLS connections.
    local tls_line="plaintext refused, broker keys accepted"
    if [ "$impl" = rust ]; then
        for i in 0 1 2; do
            n=$(($(tls_authorized_count "$i") - before[i]))
            echo "  bookie $i: $n TLS connections authorized as pulsar since the broker started"
            [ "$n" -ge 1 ] || { echo "  FAIL: bookie $i logged no authorized TLS connection from the broker"; return 1; }
            tls_line="$tls_line, bookie$i:$n"
        done
    fi
    SUMMARY="sizes=$TLS_CHUNKED_SIZES sha256=equal tls=proven($tls_line)"
}
