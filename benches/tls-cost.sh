#!/usr/bin/env bash
# benches/tls-cost.sh: what TLS costs bookie-rs and the stock Java bookie (issue #13,
# docs/benchmarks.md "TLS cost").
#
#   benches/tls-cost.sh                       # 3 rounds, write-1k-max,write-1k-rate,write-5m, 12 s each
#   ROUNDS=5 RUNTIME=10s benches/tls-cost.sh
#   JOBS=write-1k-max benches/tls-cost.sh
#
# For every round and job (benches/jobs/standard.fio), alternating:
#   fresh ours + fresh ZooKeeper/Java bookie, both with the same TLS keys (below);
#     ours plain, java plain;  (bkbench without TLS: served in clear, no authorizer)
#   fresh ours + fresh ZooKeeper/Java bookie;
#     ours tls,   java tls;    (bkbench --tls-ca/--tls-cert/--tls-key: START_TLS, mutual TLS)
# Each measured run follows an unmeasured 3 s warm-up of the same job and mode on the same
# bookie (JIT, caches, connections), and is measured with ramp_time=0 so that the bookie's CPU
# ticks (utime+stime of /proc/PID/stat, all threads) over the run cover exactly the adds it
# acknowledged (JSON total_ios - total_errors). CPU per add = ticks x 10 ms / acked adds.
#
# Certificates: made here by openssl, ECDSA P-256 (prime256v1), SHA-256 signatures, one CA,
# the bookie's certificate (SAN IP:127.0.0.1, DNS:localhost) and a client certificate, used
# by both bookies; keys PKCS#8 PEM (Java's PEM key store takes PKCS#8 only). Both bookies get
# tlsEnabledProtocols=TLSv1.3 and tlsEnabledCipherSuites=TLS_AES_256_GCM_SHA384: the Java
# bookie on OpenSSL (netty-tcnative) ignores a TLS 1.3 suite there (given TLS_AES_128_GCM_SHA256
# it still negotiated bkbench's first choice, AES-256-GCM), so AES-256-GCM is the suite both
# can be held to. bkbench logs each job's negotiated version and suite (table header).
#
# Needs: release builds of bookie and bkbench (built here), java 17, openssl, and the Maven
# classpath of tests/interop (JAVA_CP, default tests/interop/target/lib/*). Results (JSON,
# logs, ticks, the table) under $BK_TLS_DIR/results.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${BK_TLS_DIR:-/var/tmp/bk-tls-cost}"
OURS_PORT="${OURS_PORT:-3181}"
JAVA_PORT="${JAVA_PORT:-3182}"
ZK_PORT="${ZK_PORT:-2191}"
METRICS_PORT="${METRICS_PORT:-8000}"
ROUNDS="${ROUNDS:-3}"
RUNTIME="${RUNTIME:-12s}"
JOBS="${JOBS:-write-1k-max,write-1k-rate,write-5m}"
JOBFILE="$ROOT/benches/jobs/standard.fio"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
RESULTS="$DIR/results"
CP="${JAVA_CP:-$ROOT/tests/interop/target/lib/*}"
SUITE=TLS_AES_256_GCM_SHA384

die() { echo "tls-cost.sh: $*" >&2; exit 1; }
# shellcheck source=lib/java-bookie.sh
. "$ROOT/benches/lib/java-bookie.sh"
log() { echo "tls-cost.sh: $(date -u +%H:%M:%S) $*" >&2; }

command -v java >/dev/null || die "missing piece: java"
command -v openssl >/dev/null || die "missing piece: openssl"
ls $CP >/dev/null 2>&1 || die "missing piece: the Java classpath $CP (mvn package in tests/interop, or set JAVA_CP)"
if [[ -z "${NO_BUILD:-}" ]]; then
  log "building bookie and bkbench (release)"
  (cd "$ROOT" && cargo build --release -p bookie -p bkbench) || die "cargo build --release failed"
fi
BOOKIE="${BOOKIE_BIN:-$TARGET/release/bookie}"
BKBENCH="${BKBENCH_BIN:-$TARGET/release/bkbench}"
[[ -x "$BOOKIE" && -x "$BKBENCH" ]] || die "missing piece: $BOOKIE or $BKBENCH"

mkdir -p "$RESULTS"
rm -f "$RESULTS"/*.json "$RESULTS"/*.log "$RESULTS"/ticks.tsv "$RESULTS/tls-cost.md"

# ---- certificates -------------------------------------------------------------------------
PKI="$DIR/pki"
rm -rf "$PKI" && mkdir -p "$PKI"
(
  cd "$PKI"
  ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
  ec ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=tls-cost CA" -out ca.pem \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
  for who in bookie client; do
    ec "$who.key"
    openssl req -new -key "$who.key" -subj "/OU=0:bench/CN=$who" -out "$who.csr"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$who.ext"
    openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 2 \
      -extfile "$who.ext" -out "$who.pem" 2>/dev/null
  done
) || die "openssl failed making the certificates"
TLS_ARGS=(--tls-ca="$PKI/ca.pem" --tls-cert="$PKI/client.pem" --tls-key="$PKI/client.key")

# ---- bookies ------------------------------------------------------------------------------
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  done
  PIDS=()
}
trap cleanup EXIT

probe() { # port [tls]
  local extra=()
  [[ "${2:-}" == tls ]] && extra=("${TLS_ARGS[@]}")
  "$BKBENCH" --bookie=127.0.0.1:"$1" "${extra[@]}" --name=probe --number_ios=20 --runtime=5s \
    --timeout=5s --progress=0 --output-format=json --output=/dev/null 2>/dev/null
}
wait_ready() { # name port pid
  for _ in $(seq 1 120); do
    kill -0 "$3" 2>/dev/null || die "$1 bookie exited during start-up (log: $DIR/$1.log)"
    probe "$2" && probe "$2" tls && return 0
    sleep 1
  done
  die "$1 bookie on port $2 did not answer (plain and TLS) within 120 s (log: $DIR/$1.log)"
}

start_all() {
  rm -rf "$DIR/ours" "$DIR/java" "$DIR/zk"
  mkdir -p "$DIR/ours" "$DIR/java/journal" "$DIR/java/ledgers" "$DIR/zk"
  # Same settings as compare.sh, plus the stock TLS keys (no authorizer: plain clients are
  # served in clear by both bookies, so one bookie serves both modes).
  local tls_keys=(
    tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory
    tlsKeyStoreType=PEM "tlsKeyStore=$PKI/bookie.key" "tlsCertificatePath=$PKI/bookie.pem"
    tlsTrustStoreType=PEM "tlsTrustStore=$PKI/ca.pem" tlsClientAuthentication=true
    "tlsEnabledCipherSuites=$SUITE" tlsEnabledProtocols=TLSv1.3
  )
  local sets=()
  for k in "${tls_keys[@]}"; do sets+=(--set "$k"); done
  "$BOOKIE" --standalone --data-dir "$DIR/ours" --port "$OURS_PORT" --metrics-port "$METRICS_PORT" \
    --set diskUsageThreshold=0.99 --set diskUsageWarnThreshold=0.98 \
    --set dbStorage_writeCacheMaxSizeMb=256 --set dbStorage_readAheadCacheMaxSizeMb=256 \
    "${sets[@]}" >"$DIR/ours.log" 2>&1 &
  OURS_PID=$!
  PIDS+=("$OURS_PID")

  jb_start_zk "$DIR" "$ZK_PORT" "$CP"
  jb_write_conf "$DIR" "$JAVA_PORT" "$ZK_PORT" "${tls_keys[@]}"
  # The TLS factory logs its provider (OpenSSL or JDK) at info.
  jb_start_java "$DIR" "$CP" org.apache.bookkeeper.tls=info
  wait_ready ours "$OURS_PORT" "$OURS_PID"
  wait_ready java "$JAVA_PORT" "$JAVA_PID"
}

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() { # round job side mode
  local round=$1 job=$2 side=$3 mode=$4 port=$OURS_PORT pid=$OURS_PID extra=()
  [[ $side == java ]] && port=$JAVA_PORT pid=$JAVA_PID
  [[ $mode == tls ]] && extra=("${TLS_ARGS[@]}")
  local common=("$JOBFILE" --section="$job" --bookie=127.0.0.1:"$port" "${extra[@]}" --progress=0 --output-format=json)
  "$BKBENCH" "${common[@]}" --runtime=3s --ramp_time=0 --output=/dev/null 2>>"$RESULTS/bkbench.log" \
    || log "warm-up of $job against $side/$mode had errors"
  local out="$RESULTS/r$round-$job-$side-$mode.json" t0 t1 rc=0
  t0=$(ticks "$pid")
  "$BKBENCH" "${common[@]}" --runtime="$RUNTIME" --ramp_time=0 --output="$out" 2>>"$RESULTS/bkbench.log" || rc=$?
  t1=$(ticks "$pid")
  [[ $rc -le 2 ]] || die "bkbench failed against $side/$mode on $job (exit $rc; $RESULTS/bkbench.log)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$job" "$side" "$mode" "$((t1 - t0))" >>"$RESULTS/ticks.tsv"
  log "r$round $job $side $mode: $((t1 - t0)) ticks"
}

log "rounds=$ROUNDS jobs=$JOBS runtime=$RUNTIME; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >"$RESULTS/load.txt"
for round in $(seq 1 "$ROUNDS"); do
  for job in ${JOBS//,/ }; do
    for mode in plain tls; do
      start_all
      [[ $round == 1 && $job == "${JOBS%%,*}" && $mode == plain ]] && {
        grep -i -E 'provider|openssl|jdk' "$DIR/java.log" >"$RESULTS/java-tls-provider.log" || true
      }
      run_one "$round" "$job" ours "$mode"
      run_one "$round" "$job" java "$mode"
      cleanup
      cp "$DIR/java.log" "$RESULTS/java-r$round-$job-$mode.log"
      cp "$DIR/ours.log" "$RESULTS/ours-r$round-$job-$mode.log"
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS/load.txt"
trap - EXIT
rm -rf "$DIR/ours" "$DIR/java" "$DIR/zk"

# ---- the table ----------------------------------------------------------------------------
{
  echo "TLS cost, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, $ROUNDS rounds x $RUNTIME, $(tr '\n' ';' <"$RESULTS/load.txt")"
  echo "client-side TLS sessions: $(grep -o 'TLS to [^ ]*: .*' "$RESULTS/bkbench.log" | sed 's/^TLS to [^ ]* //' | sort | uniq -c | tr '\n' ';')"
  echo
  python3 "$ROOT/benches/tls-cost-table.py" "$RESULTS"
} | tee "$RESULTS/tls-cost.md"
log "results: $RESULTS"
