#!/bin/bash
# write-1k-rate p99 with and without back-to-back unlimited scrub passes (scrubber helper).
# Usage: benches/scrub-p99.sh (after cargo build --release -p bookie -p bkbench); env BYTES
# (localScrubRateLimitBytes, 0 = unlimited), RT (job runtime), PREFILL (write-5m runtime).
# Ports: bookie 3810, admin 8810; data under /tmp/scrub-bench (removed at the end).
set -u
T=${CARGO_TARGET_DIR:-$(dirname "$0")/../target}/release
D=/tmp/scrub-bench; rm -rf $D; mkdir -p $D
$T/bookie --standalone --data-dir $D/data --port 3810 \
  --set httpServerEnabled=true --set httpServerHost=127.0.0.1 --set httpServerPort=8810 \
  --set statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider \
  --set localScrubRateLimit=0 --set localScrubRateLimitBytes=${BYTES:-0} > $D/bookie.log 2>&1 &
BP=$!
for i in $(seq 1 200); do (echo > /dev/tcp/127.0.0.1/3810) 2>/dev/null && break; sleep 0.2; done
J=$(dirname "$0")/jobs/standard.fio
$T/bkbench $J --bookie=127.0.0.1:3810 --section=write-5m --runtime=${PREFILL:-8s} --progress=0 | grep -E "IOPS|stopped"
sleep 3
run() { $T/bkbench $J --bookie=127.0.0.1:3810 --section=write-1k-rate --runtime=${RT:-20s} --progress=0 | grep -E "IOPS|99.00th|stopped" ; }
for round in 1; do
  echo "== round $round baseline"; run
  echo "== round $round with scrub passes back to back"
  ( while true; do curl -s -X PUT localhost:8810/api/v1/bookie/scrub >/dev/null; sleep 0.1; done ) &
  LP=$!
  run
  kill $LP; wait $LP 2>/dev/null
  curl -s localhost:8810/metrics | grep -E "^bookie_rs_scrub_(passes|bytes) |^scrubber_detectedScrubErrors "
done
curl -s localhost:8810/api/v1/bookie/scrub | head -30
kill -TERM $BP; wait $BP
du -sh $D; rm -rf $D
