#!/usr/bin/env bash
# benches/compare.sh: bookie-rs vs the stock Java bookie vs fio, from one command.
#
#   benches/compare.sh                      # the whole standard job set, 30 s per job
#   QUICK=1 benches/compare.sh              # 5 s per job, smaller prefills (a smoke run)
#   JOBS=write-1k-max,write-5m benches/compare.sh
#   PROTOCOL=v3 benches/compare.sh         # the same jobs over the v3 protobuf protocol
#   KEEP=1 benches/compare.sh              # keep the bookies' data directories afterwards
#
# What it does (docs/benchmarks.md, "Comparison with the Java bookie"):
#   1. builds `bookie` and `bkbench` (release) and the Java conformance suite's classpath
#      (tests/interop: BookKeeper 4.17.3 + ZooKeeper 3.9.3 from Maven);
#   2. for each job of benches/jobs/standard.fio, starts from empty data directories our
#      bookie (standalone, no ZooKeeper) and, with a ZooKeeper from that classpath, one stock
#      Java bookie (DbLedgerStorage), both with journal fsync on, data under the same
#      directory ($BK_COMPARE_DIR, default /var/tmp/bk-compare: one disk);
#   3. runs the job against ours, then against Java
#      (alternating, so disk drift hits both alike), then the fio job of the same name
#      (benches/jobs/fio-equivalents.fio) on the same disk;
#   4. prints the side-by-side table (ours/Java, ours/fio, peak RSS from VmHWM) and writes it,
#      with every JSON report and bookie log, to $BK_COMPARE_DIR/results/.
# A missing piece (bookie binary, Java, Maven classpath, fio) stops it with a message naming it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${BK_COMPARE_DIR:-/var/tmp/bk-compare}"
OURS_PORT="${OURS_PORT:-3181}"
JAVA_PORT="${JAVA_PORT:-3182}"
ZK_PORT="${ZK_PORT:-2191}"
JOBFILE="$ROOT/benches/jobs/standard.fio"
FIOFILE="$ROOT/benches/jobs/fio-equivalents.fio"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
RESULTS="$DIR/results"

die() { echo "compare.sh: $*" >&2; exit 1; }
# shellcheck source=lib/java-bookie.sh
. "$ROOT/benches/lib/java-bookie.sh"
log() { echo "compare.sh: $*" >&2; }

# ---- 0. pieces ---------------------------------------------------------------------------
command -v cargo >/dev/null || die "missing piece: cargo"
command -v java >/dev/null || die "missing piece: java (the stock Java bookie needs a JRE 17)"
command -v fio >/dev/null || die "missing piece: fio (apt-get install -y fio)"
[[ -f "$ROOT/tests/interop/pom.xml" ]] || die "missing piece: tests/interop (the Java conformance suite, whose Maven build brings the stock Java bookie)"

log "building bookie and bkbench (release)"
(cd "$ROOT" && cargo build --release -p bkbench) || die "cargo build --release -p bkbench failed"
(cd "$ROOT" && cargo build --release -p bookie) || die "missing piece: the bookie binary does not build (cargo build --release -p bookie failed)"
BOOKIE="${BOOKIE_BIN:-$TARGET/release/bookie}"
BKBENCH="$TARGET/release/bkbench"
[[ -x "$BOOKIE" ]] || die "missing piece: bookie binary not found at $BOOKIE (set BOOKIE_BIN)"
[[ -x "$BKBENCH" ]] || die "missing piece: bkbench binary not found at $BKBENCH"

if [[ ! -d "$ROOT/tests/interop/target/lib" ]]; then
  command -v mvn >/dev/null || die "missing piece: mvn (to build tests/interop's classpath)"
  log "building the Java classpath (tests/interop: mvn package)"
  (cd "$ROOT/tests/interop" && { mvn -B -q -o package 2>/dev/null || mvn -B -q package; }) \
    || die "missing piece: tests/interop does not build (mvn package failed)"
fi
CP="$ROOT/tests/interop/target/lib/*"
ls $CP >/dev/null 2>&1 || die "missing piece: tests/interop/target/lib is empty"

# ---- 1. directories, job list ------------------------------------------------------------
mkdir -p "$RESULTS"
rm -f "$RESULTS"/*.json "$RESULTS"/*.md
ALL_JOBS=$(grep -E '^\[[^]]+\]' "$JOBFILE" | tr -d '[]' | grep -v '^global$')
JOBS="${JOBS:-$(echo $ALL_JOBS | tr ' ' ',')}"
OVERRIDES=(--protocol="${PROTOCOL:-v2}")
FIO_OVERRIDES=()
if [[ -n "${QUICK:-}" ]]; then
  OVERRIDES+=(--runtime=5s --ramp_time=1s)
  FIO_OVERRIDES=(--runtime=5)
fi

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.2
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  PIDS=()
}
trap cleanup EXIT

wait_ready() { # name port pid: the bookie answers a short bkbench probe
  local name=$1 port=$2 pid=$3
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || die "$name bookie exited during start-up (log: $DIR/$name.log)"
    if "$BKBENCH" --bookie=127.0.0.1:"$port" --name=probe --number_ios=20 --runtime=5s \
        --timeout=5s --progress=0 --output-format=json --output=/dev/null 2>/dev/null; then
      return 0
    fi
    sleep 1
  done
  die "$name bookie on port $port did not answer within 120 s (log: $DIR/$name.log)"
}

hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo ""; }

# ---- 2-3. fresh bookies for every job ---------------------------------------------------
# Every job starts from empty data directories, our bookie and ZooKeeper + the Java bookie
# freshly started: a job then never runs on a disk that an earlier job filled (30 s of 5 MiB
# writes is ~29 GB through each bookie, and standalone has no GC), nor against caches warmed
# by another job. Peak RSS is the largest VmHWM over the jobs.
OURS_HWM=0 JAVA_HWM=0
start_all() {
  rm -rf "$DIR/ours" "$DIR/java" "$DIR/zk" "$DIR/fio"
  mkdir -p "$DIR/ours" "$DIR/java/journal" "$DIR/java/ledgers" "$DIR/zk" "$DIR/fio"
  # ---- 2. our bookie -----------------------------------------------------------------------
  log "starting our bookie on :$OURS_PORT (standalone, data in $DIR/ours)"
  # Same disk-full thresholds as the Java bookie below (a shared disk may be fuller than 90 %),
  # and the same cache sizes: the Java bookie's defaults with -XX:MaxDirectMemorySize=1g are a
  # 256 MiB write cache and a 256 MiB read-ahead cache (25 % of direct memory each); ours would
  # otherwise take 1/16 of RAM for each, and the RSS column would compare unequal budgets.
  "$BOOKIE" --standalone --data-dir "$DIR/ours" --port "$OURS_PORT" \
    --set diskUsageThreshold=0.99 --set diskUsageWarnThreshold=0.98 \
    --set dbStorage_writeCacheMaxSizeMb=256 --set dbStorage_readAheadCacheMaxSizeMb=256 \
    >"$DIR/ours.log" 2>&1 &
  OURS_PID=$!
  PIDS+=("$OURS_PID")

  # ---- 3. ZooKeeper + the stock Java bookie (benches/lib/java-bookie.sh) ----------------------
  log "starting ZooKeeper on :$ZK_PORT and the Java bookie on :$JAVA_PORT"
  jb_start_zk "$DIR" "$ZK_PORT" "$CP"
  jb_write_conf "$DIR" "$JAVA_PORT" "$ZK_PORT"
  jb_start_java "$DIR" "$CP"

  wait_ready ours "$OURS_PORT" "$OURS_PID"
  wait_ready java "$JAVA_PORT" "$JAVA_PID"
}
stop_all() {
  local h
  h=$(hwm_kib "$OURS_PID"); [[ -n "$h" && "$h" -gt "$OURS_HWM" ]] && OURS_HWM=$h
  h=$(hwm_kib "$JAVA_PID"); [[ -n "$h" && "$h" -gt "$JAVA_HWM" ]] && JAVA_HWM=$h
  kill -0 "$OURS_PID" 2>/dev/null || log "WARNING: our bookie had stopped before the end of $1 (log: $RESULTS/ours-$1.log)"
  kill -0 "$JAVA_PID" 2>/dev/null || log "WARNING: the Java bookie had stopped before the end of $1 (log: $RESULTS/java-$1.log)"
  cleanup
  cp "$DIR/ours.log" "$RESULTS/ours-$1.log" 2>/dev/null || true
  cp "$DIR/java.log" "$RESULTS/java-$1.log" 2>/dev/null || true
}

# ---- 4. the job set, alternating -----------------------------------------------------------
OURS_FILES=() JAVA_FILES=() FIO_FILES=()
log "running: $JOBS"
for job in ${JOBS//,/ }; do
  log "$job: starting fresh bookies"
  start_all
  for side in ours java; do
    port=$OURS_PORT; [[ $side == java ]] && port=$JAVA_PORT
    out="$RESULTS/$side-$job.json"
    log "$job against $side"
    rc=0
    extra=()
    if [[ -n "${QUICK:-}" ]] && grep -A12 "^\[$job\]" "$JOBFILE" | grep -q '^prefill='; then
      extra=(--prefill=128m)
    fi
    "$BKBENCH" "$JOBFILE" --section="$job" --bookie=127.0.0.1:"$port" "${OVERRIDES[@]}" "${extra[@]}" \
      --write_lat_log="$RESULTS/$side" --output-format=json --output="$out" || rc=$?
    [[ $rc -le 2 ]] || die "bkbench failed against $side on $job (exit $rc)"
    [[ $side == ours ]] && OURS_FILES+=("$out") || JAVA_FILES+=("$out")
  done
  if grep -q "^\[$job\]" "$FIOFILE"; then
    log "$job with fio (the disk's limit)"
    (cd "$DIR/fio" && fio "$FIOFILE" --section="$job" "${FIO_OVERRIDES[@]}" --output-format=json \
      --output="$RESULTS/fio-$job.json") || die "fio failed on $job"
    rm -f "$DIR/fio/fio-bench.dat"
    FIO_FILES+=("$RESULTS/fio-$job.json")
  fi
  stop_all "$job"
done

join() { local IFS=,; echo "$*"; }
ARGS=(--ours="$(join "${OURS_FILES[@]}")" --java="$(join "${JAVA_FILES[@]}")")
[[ ${#FIO_FILES[@]} -gt 0 ]] && ARGS+=(--fio="$(join "${FIO_FILES[@]}")")
[[ "$OURS_HWM" -gt 0 ]] && ARGS+=(--rss-ours="$OURS_HWM")
[[ "$JAVA_HWM" -gt 0 ]] && ARGS+=(--rss-java="$JAVA_HWM")
{
  echo "bookie-rs vs Java bookie vs fio, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, protocol ${PROTOCOL:-v2}${QUICK:+, QUICK}, data in $DIR"
  echo "(ratios: ours/java; > 1 is better for IOPS and MiB/s, < 1 is better for latency)"
  echo
  "$BKBENCH" compare "${ARGS[@]}"
} | tee "$RESULTS/compare.md"
trap - EXIT
if [[ -z "${KEEP:-}" ]]; then
  # The bookies' data can be many GiB; keep it only when asked (KEEP=1).
  rm -rf "$DIR/ours" "$DIR/java" "$DIR/zk" "$DIR/fio"
fi
log "results, JSON reports, per-second CSV/SVG logs: $RESULTS"
