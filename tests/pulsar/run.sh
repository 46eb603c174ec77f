#!/usr/bin/env bash
# tests/pulsar/run.sh: the scenarios of the stock-Pulsar suite (issue #16), one cluster per run,
# against our bookie or the stock Java bookie (the reference).
#
#   tests/pulsar/run.sh [--impl rust|java] [--scenario NAME] [--wire v2|v3]
#   tests/pulsar/run.sh --ratchet [--impl rust|java|both] [--ci]
#       --impl      bookies of bookie-rs (default; $BOOKIE_BIN or target/{release,debug}/bookie)
#                   or the stock Java bookie 4.17.2 from the broker's Maven dependencies
#       --scenario  NAME: scenarios/NAME.sh (default tls_chunked): tls_chunked, ordered, bookie_kill,
#                   broker_kill, all_kill, retention_gc, full_ledger_disk, rolling_swap (whose
#                   cluster starts on Java bookies: --impl names their replacements)
#       --wire      the broker's bookkeeperUseV2WireProtocol: v2 (true, the stock default) or v3
#
#       --ratchet   every `scenario impl wire` row of expected-pass.txt (only --impl's rows; default
#                   both), one run.sh each, then a table of results and durations; exit status 0
#                   only if every row passed
#       --ci        with --ratchet: only the rows marked `ci` (what scripts/test-all.sh runs)
#
# Prints the scenario's steps and a summary line `PASS|FAIL <scenario> impl=.. wire=.. <s> s ...`;
# exit status 0 only on PASS. Env: PL_KEEP=1 keeps the work dir and its logs, and the port knobs
# of launcher.sh (PL_ZK_PORT, PL_BOOKIE_PORT_BASE, PL_BROKER_PORT, PL_WEB_PORT).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
impl=rust scenario=tls_chunked wire=v2 ratchet=0 impl_given=0 ci_only=0
while [ $# -gt 0 ]; do
    case $1 in
        --ratchet) ratchet=1; shift ;;
        --ci) ci_only=1; shift ;;
        --impl) impl=$2; impl_given=1; shift 2 ;;
        --scenario) scenario=$2; shift 2 ;;
        --wire) wire=$2; shift 2 ;;
        *) echo "usage: $0 [--impl rust|java] [--scenario NAME] [--wire v2|v3] | --ratchet [--impl rust|java|both] [--ci]" >&2; exit 2 ;;
    esac
done

# The ratchet: each row of expected-pass.txt in its own run.sh (its own cluster and work dir).
if [ "$ratchet" = 1 ]; then
    [ "$impl_given" = 1 ] || impl=both
    case $impl in rust | java | both) ;; *) echo "run.sh: --ratchet --impl rust, java or both" >&2; exit 2 ;; esac
    table=() failed=0 total0=$(date +%s)
    while read -r r_scenario r_impl r_wire r_ci; do
        case $r_scenario in '' | '#'*) continue ;; esac
        [ "$ci_only" = 0 ] || [ "${r_ci:-}" = ci ] || continue
        [ "$impl" = both ] || [ "$impl" = "$r_impl" ] || continue
        echo "=== ratchet: $r_scenario $r_impl $r_wire"
        t=$(date +%s)
        if "$here/run.sh" --impl "$r_impl" --scenario "$r_scenario" --wire "$r_wire"; then r=PASS; else r=FAIL; failed=$((failed + 1)); fi
        table+=("$(printf '%-12s %-5s %-3s %-4s %4d s' "$r_scenario" "$r_impl" "$r_wire" "$r" $(($(date +%s) - t)))")
    done <"$here/expected-pass.txt"
    echo
    echo "scenario     impl  wire result wall (with shutdown)"
    printf '%s\n' "${table[@]}"
    echo "ratchet: ${#table[@]} rows, $failed failed, $(($(date +%s) - total0)) s in all"
    [ "$failed" = 0 ] && [ "${#table[@]}" -gt 0 ]
    exit
fi
case $impl in rust | java) ;; *) echo "run.sh: --impl rust or java" >&2; exit 2 ;; esac
case $wire in v2 | v3) ;; *) echo "run.sh: --wire v2 or v3" >&2; exit 2 ;; esac
[ -f "$here/scenarios/$scenario.sh" ] || { echo "run.sh: no scenario $scenario (tests/pulsar/scenarios/)" >&2; exit 2; }

# shellcheck source=launcher.sh
. "$here/launcher.sh"
# shellcheck source=tls-certs.sh
. "$here/tls-certs.sh"
# shellcheck disable=SC1090
. "$here/scenarios/$scenario.sh"

# Keep the logs of a failed run: they are the only account of what went wrong.
rc=1
finish() {
    if [ "$rc" != 0 ] && [ -n "${PL_DIR:-}" ] && [ -z "${PL_KEEP:-}" ]; then
        PL_KEEP=1
        echo "run.sh: failed; logs kept in $PL_DIR" >&2
        # What a CI log needs to tell a full host disk (read-only bookies) from a bookie bug.
        df -h "$PL_DIR" >&2 || true
        for f in "$PL_DIR"/bookie*.log; do
            [ -f "$f" ] || continue
            echo "--- $f: registration, mode and disk lines (last 10)" >&2
            grep -iE "regist|read-only|readonly|writable|disk|full|error" "$f" | tail -10 >&2 || true
        done
    fi
    pl_stop_all
}
trap finish EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
SUMMARY=""
if "scenario_$scenario" "$impl" "$wire"; then rc=0; fi
echo "$([ "$rc" = 0 ] && echo PASS || echo FAIL) $scenario impl=$impl wire=$wire $(($(date +%s) - t0)) s $SUMMARY"
exit "$rc"
