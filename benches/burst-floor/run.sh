#!/usr/bin/env bash
# run.sh: builds burst_floor.c and runs its modes in alternating rounds (docs/benchmarks.md,
# "What a burst costs with no bookie" and "One thread on one io_uring"). Env: MODES ("1 2 3 4"),
# PAIRS (3 rounds), SECS (8), CONNS (4), DIR (a directory on the disk under test; default
# /var/tmp/burst-floor). Modes 3 and 4 need liburing (Debian: apt-get install liburing-dev).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${DIR:-/var/tmp/burst-floor}"
if [[ ! -e /usr/include/liburing.h ]]; then
  echo "run.sh: liburing's header is missing (apt-get install liburing-dev)" >&2
  exit 1
fi
mkdir -p "$dir"
gcc -O2 -Wall -pthread -o "$dir/burst_floor" "$here/burst_floor.c" -luring
for ((i = 1; i <= ${PAIRS:-3}; i++)); do
  for mode in ${MODES:-1 2 3 4}; do
    "$dir/burst_floor" "$mode" "${SECS:-8}" "$dir/data.$mode" "${CONNS:-4}"
    sleep 1.5   # the port's TIME_WAIT and the previous run's writeback
  done
done
rm -f "$dir"/data.*
