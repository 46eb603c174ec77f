#!/usr/bin/env bash
# benches/chaos/side-by-side.sh: every standard drill that injects nothing into the bookie
# (no `chaos = true`) run by bkchaos against bookie-rs and then against the stock Java bookie,
# both registered in a ZooKeeper of the drill's own (`--zookeeper`; a Java bookie has no
# standalone mode), and one table of both (issue 14; docs/chaos.md §7 has the last one).
#
#   benches/chaos/side-by-side.sh [OUT_DIR]
#
# OUT_DIR (default: a new /tmp/bk-side-by-side.XXXXXX) gets each run's report (<drill>-<impl>.txt
# and .json) and table.txt. Env: BOOKIE_BIN (default target/debug/bookie), BKCHAOS (default
# target/debug/bkchaos; both built when missing), BKCHAOS_JAVA_CP (default: the jars of
# tests/interop's Maven build, built here when missing), SIDE_BY_SIDE_SETS (more KEY=VALUE
# settings for every bookie, space-separated), SIDE_BY_SIDE_DRILLS (drill names, default all
# that qualify).
# Exit status: 0 when every bookie-rs run passed and every Java run ran; 1 when a bookie-rs run
# failed or a Java run could not run (bkchaos exit 2: the harness, not the bookie); 2 when the
# script could not run. A Java run that ran and failed (a loss, or a Java bookie that exited,
# as a stock bookie does when its journal disk fills) is a finding about the reference, shown
# in the table and listed at the end, not a failure of ours.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-$(mktemp -d /tmp/bk-side-by-side.XXXXXX)}
mkdir -p "$OUT"
BOOKIE_BIN=${BOOKIE_BIN:-$PWD/target/debug/bookie}
BKCHAOS=${BKCHAOS:-$PWD/target/debug/bkchaos}
if [ ! -x "$BOOKIE_BIN" ] || [ ! -x "$BKCHAOS" ]; then
    cargo build -q -p bookie -p bkbench || exit 2
fi
if [ -z "${BKCHAOS_JAVA_CP:-}" ] && ! ls tests/interop/target/lib/bookkeeper-server-*.jar >/dev/null 2>&1; then
    echo "side-by-side: building tests/interop's Maven project for the stock bookie's jars"
    (cd tests/interop && { mvn -B -q -o package 2>/dev/null || mvn -B -q package; }) || exit 2
fi
# As chaos_drills.rs: the host disk's free share must not make a bookie read-only, and small
# caches keep six bookies (three at a time) small. Stock keys, so both implementations read them.
SETS=(diskUsageThreshold=0.999 diskUsageWarnThreshold=0.998
    dbStorage_writeCacheMaxSizeMb=16 dbStorage_readAheadCacheMaxSizeMb=8)
# shellcheck disable=SC2206
SETS+=(${SIDE_BY_SIDE_SETS:-})
set_args=()
for kv in "${SETS[@]}"; do set_args+=(--set "$kv"); done

drills=()
for f in benches/chaos/*.drill; do
    name=$(basename "$f" .drill)
    if [ -n "${SIDE_BY_SIDE_DRILLS:-}" ] && [[ " $SIDE_BY_SIDE_DRILLS " != *" $name "* ]]; then continue; fi
    # Drills that inject faults need bookie-rs's chaos layer; the Java bookie has none.
    if grep -Eq '^[[:space:]]*chaos[[:space:]]*=[[:space:]]*(true|1|yes)' "$f"; then continue; fi
    drills+=("$f")
done
[ ${#drills[@]} -gt 0 ] || { echo "side-by-side: no drill qualifies" >&2; exit 2; }

failed=0
java_failed=()
for f in "${drills[@]}"; do
    name=$(basename "$f" .drill)
    for impl in rust java; do
        echo "== $name against $impl"
        rc=0
        RUST_LOG=${RUST_LOG:-warn} "$BKCHAOS" --impl "$impl" --zookeeper --bookie-bin "$BOOKIE_BIN" \
            "${set_args[@]}" --json "$OUT/$name-$impl.json" --dir "$OUT/$name-$impl" "$f" \
            >"$OUT/$name-$impl.txt" 2>&1 || rc=$?
        grep -E '^(RESULT|PROBLEM)' "$OUT/$name-$impl.txt" || tail -5 "$OUT/$name-$impl.txt"
        if [ "$rc" != 0 ]; then
            if [ "$impl" = rust ] || [ "$rc" != 1 ]; then failed=1; else java_failed+=("$name"); fi
        fi
        # A passing run's directories go (bookie logs of a failed one stay for the reader).
        if [ "$rc" = 0 ]; then rm -rf "${OUT:?}/$name-$impl"; fi
    done
done

python3 - "$OUT" "${drills[@]}" >"$OUT/table.txt" <<'EOF'
import json, os, re, sys
out, drills = sys.argv[1], [os.path.basename(d)[:-len(".drill")] for d in sys.argv[2:]]
print("| drill | bookie | acknowledged | copies verified | lost / unreachable | p99 ms before the first step | worst phase p99 ms (phase) | restarts: serving again after s | ZooKeeper | result |")
print("|---|---|---|---|---|---|---|---|---|---|")
for d in drills:
    for impl in ("rust", "java"):
        p = os.path.join(out, f"{d}-{impl}.json")
        if not os.path.exists(p):
            print(f"| {d} | {impl} | (no report: see {d}-{impl}.txt) | | | | | | | FAIL |")
            continue
        r = json.load(open(p))
        v = r["verdict"]
        phases = r["phases"]
        base = phases[0]["p99_ms"] if phases else 0
        worst = max(phases[1:] or phases, key=lambda ph: ph["p99_ms"]) if phases else None
        serving = [m.group(1) for s in r["steps"] for m in [re.search(r"serving after ([0-9.]+) s", s["result"])] if m and s["step"].startswith("restart")]
        zk = "; ".join(s["result"].split("; ", 1)[-1] for s in r["steps"] if s["step"] == "zk_start") or "-"
        result = "PASS" if r["passed"] else "FAIL" + (f": {r['problems'][0].split(';')[0]}" if r["problems"] else "")
        print(f"| {d} | {r['implementation']} | {v['acknowledged_entries']:,} | {v['verified']:,} of {v['copies']:,} | {v['lost']} / {v['unreachable']} | {base:.1f} | "
              + (f"{worst['p99_ms']:.1f} ({worst['label']})" if worst else "-")
              + f" | {', '.join(serving) or '-'} | {zk} | {result} |")
EOF
cat "$OUT/table.txt"
echo "reports: $OUT"
if [ ${#java_failed[@]} -gt 0 ]; then
    echo "the stock Java bookie failed: ${java_failed[*]} (see the table; not a failure of bookie-rs)"
fi
exit "$failed"
