#!/usr/bin/env bash
# run.sh: builds burst_floor.c and runs its two modes in alternating pairs (docs/benchmarks.md,
# "What a burst costs with no bookie"). Env: PAIRS (3), SECS (8), CONNS (4), DIR (a
# directory on the disk under test; default /var/tmp/burst-floor).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${DIR:-/var/tmp/burst-floor}"
mkdir -p "$dir"
gcc -O2 -pthread -o "$dir/burst_floor" "$here/burst_floor.c"
for ((i = 1; i <= ${PAIRS:-3}; i++)); do
  for mode in 1 2; do
    "$dir/burst_floor" "$mode" "${SECS:-8}" "$dir/data.$mode" "${CONNS:-4}"
    sleep 1.5   # the port's TIME_WAIT and the previous run's writeback
  done
done
rm -f "$dir"/data.*
