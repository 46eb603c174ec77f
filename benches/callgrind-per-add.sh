#!/usr/bin/env bash
# benches/callgrind-per-add.sh: instructions per durable add, a figure that does not move
# with the machine's load (docs/benchmarks.md, "CPU per add: instruction counts").
#
#   benches/callgrind-per-add.sh                   # v2 and v3, N1=2000 and N2=6000 adds
#   PROTOCOLS=v2 N1=1000 N2=5000 benches/callgrind-per-add.sh
#   TOP=40 benches/callgrind-per-add.sh           # longer function table
#
# For each protocol it runs the release bookie (standalone, fresh temp data directory)
# under `valgrind --tool=callgrind` twice: once driven by bkbench for N1 1 KiB adds, once
# for N2, with the same job shape (write-1k-max: 16 ledgers, 4 connections, 256 in flight),
# and then stops it with SIGTERM (the clean shutdown flushes the write cache, so the entry
# log's share of an add is counted too). Start-up, connection set-up and shutdown cost the
# same in both runs, so
#     instructions per durable add = (Ir(N2) - Ir(N1)) / (N2 - N1)
# and the per-function table is the same difference of inclusive Ir, per add.
# Valgrind runs one thread at a time: the figure is a count of user-space instructions of
# the bookie process (all threads), not a time, and the kernel's work (TCP, fdatasync,
# io_uring) is not in it. Outputs: $OUT_DIR (default /var/tmp/bk-callgrind) holds the
# callgrind.out files, the bookie logs and summary-<protocol>.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BOOKIE="${BOOKIE_BIN:-$TARGET/release/bookie}"
BKBENCH="${BKBENCH_BIN:-$TARGET/release/bkbench}"
N1="${N1:-2000}"
N2="${N2:-6000}"
TOP="${TOP:-25}"
PROTOCOLS="${PROTOCOLS:-v2 v3}"
OUT_DIR="${OUT_DIR:-/var/tmp/bk-callgrind}"

die() { echo "callgrind-per-add.sh: $*" >&2; exit 1; }
log() { echo "callgrind-per-add.sh: $*" >&2; }

command -v valgrind >/dev/null || die "missing piece: valgrind (apt-get install -y valgrind)"
command -v callgrind_annotate >/dev/null || die "missing piece: callgrind_annotate (valgrind package)"
command -v python3 >/dev/null || die "missing piece: python3 (for the per-function difference)"
[[ -x "$BOOKIE" ]] || die "missing piece: $BOOKIE (cargo build --release -p bookie, or set BOOKIE_BIN)"
[[ -x "$BKBENCH" ]] || die "missing piece: $BKBENCH (cargo build --release -p bkbench)"
(( N2 > N1 )) || die "N2 ($N2) must be larger than N1 ($N1)"
mkdir -p "$OUT_DIR"

BOOKIE_PID=""
DATA=""
cleanup() {
  [[ -n "$BOOKIE_PID" ]] && kill -9 "$BOOKIE_PID" 2>/dev/null || true
  [[ -n "$DATA" ]] && rm -rf "$DATA" || true
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# One run: the bookie under callgrind, N adds, clean stop. Prints the total Ir.
run_once() { # protocol n
  local proto=$1 n=$2 port out
  port=$(free_port)
  DATA=$(mktemp -d /var/tmp/bk-callgrind-data.XXXXXX)
  out="$OUT_DIR/callgrind.out.$proto.$n"
  rm -f "$out"
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$BOOKIE" --standalone --data-dir "$DATA" --port "$port" \
    --set diskUsageThreshold=0.99 --set diskUsageWarnThreshold=0.98 \
    --set dbStorage_writeCacheMaxSizeMb=256 --set dbStorage_readAheadCacheMaxSizeMb=256 \
    >"$OUT_DIR/bookie.$proto.$n.log" 2>&1 &
  BOOKIE_PID=$!
  # Ready = the port accepts (no probe adds: both runs must differ only in N).
  local ok=0
  for _ in $(seq 1 600); do
    kill -0 "$BOOKIE_PID" 2>/dev/null || die "bookie exited during start-up (log: $OUT_DIR/bookie.$proto.$n.log)"
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ok=1; break; fi
    sleep 0.5
  done
  [[ $ok == 1 ]] || die "bookie under valgrind did not listen within 300 s"
  sleep 2 # the port listens before every start-up task has settled
  "$BKBENCH" --bookie=127.0.0.1:"$port" --name=w --rw=write --bs=1k --iodepth=256 \
    --ledgers=16 --connections=4 --protocol="$proto" --number_ios="$n" --runtime=30m \
    --timeout=120s --progress=0 --output-format=json --output="$OUT_DIR/bkbench.$proto.$n.json" \
    >/dev/null || die "bkbench failed against the bookie under valgrind ($proto, $n adds)"
  python3 - "$OUT_DIR/bkbench.$proto.$n.json" "$n" <<'EOF' || die "bkbench report: errors or fewer adds than asked"
import json, sys
r = json.load(open(sys.argv[1]))
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("errors", "total_errors") and isinstance(v, int) and v:
                sys.exit(1)
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(r)
EOF
  kill -TERM "$BOOKIE_PID"
  wait "$BOOKIE_PID" || die "bookie did not stop cleanly (log: $OUT_DIR/bookie.$proto.$n.log)"
  BOOKIE_PID=""
  rm -rf "$DATA"; DATA=""
  grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
}

for proto in $PROTOCOLS; do
  log "$proto: $N1 adds under callgrind"
  ir1=$(run_once "$proto" "$N1")
  log "$proto: $N2 adds under callgrind"
  ir2=$(run_once "$proto" "$N2")
  # Which disk backend ran (Auto falls back to syscalls where io_uring cannot be set up):
  # the profile names the one whose code ran.
  backend=syscalls
  grep -q 'bk_disk::uring::UringDisk' "$OUT_DIR/callgrind.out.$proto.$N2" && backend=io_uring
  summary="$OUT_DIR/summary-$proto.txt"
  {
    echo "protocol $proto, 1 KiB adds, 16 ledgers, 4 connections, 256 in flight"
    echo "Ir($N1 adds) = $ir1"
    echo "Ir($N2 adds) = $ir2"
    echo "instructions per durable add = $(( (ir2 - ir1) / (N2 - N1) ))"
    echo "disk backend (from the profile): $backend"
    echo
    python3 - "$OUT_DIR/callgrind.out.$proto.$N1" "$OUT_DIR/callgrind.out.$proto.$N2" \
      "$(( N2 - N1 ))" "$TOP" <<'EOF'
import re, subprocess, sys
f1, f2, dn, top = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def per_function(path, inclusive):
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                          "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$", line)
        if not m or ":" not in m.group(2):
            continue
        name = m.group(2).strip()
        if name.startswith(("=>", "<", "*")):
            continue  # a call line of the tree, not a function's own line
        name = re.sub(r"\s+\[[^]]*\]$", "", name)  # the object file
        name = re.sub(r"^[^:]*(/|\?\?\?)[^:]*:", "", name, count=1)  # the source file
        d[name] = d.get(name, 0) + int(m.group(1).replace(",", ""))
    return d
for inclusive, what in ((True, "inclusive"), (False, "self (exclusive)")):
    a, b = per_function(f1, inclusive), per_function(f2, inclusive)
    rows = sorted(((b.get(k, 0) - a.get(k, 0)) / dn, k) for k in set(a) | set(b))
    rows.reverse()
    print(f"top {top} functions by {what} Ir per add (difference of the two runs):")
    for per, name in rows[:top]:
        print(f"{per:10.0f}  {name[:140]}")
    print()
EOF
  } >"$summary"
  cat "$summary"
done
