#!/usr/bin/env bash
# The one test command (README.md; CI runs it through .ci/run). Runs, in order:
#   1. prerequisites: the Debian zookeeper package (registration and GC-scan tests) and
#      cargo-fuzz, installed when missing;
#   2. cargo fmt --check, the citation check (scripts/check-citations.sh) and clippy
#      -D warnings over every target (clippy.toml also keeps file access inside disk/);
#   3. cargo test over the workspace (unit, property, simulated-disk, crash and protocol tests),
#      then bkbench and the chaos drills (benches/chaos/) against the real bookie binary;
#   4. a smoke run of every fuzz target (the wire decoders 60 s each, the others shorter);
#   5. the Java conformance suite (tests/interop/run.sh): every scenario against the stock
#      Java bookie, and against ours, checked against tests/interop/expected-pass.txt; then the
#      chaos drills that inject nothing against both bookies (benches/chaos/side-by-side.sh,
#      on the stock bookie jars that suite's Maven build fetched);
#   6. stock Pulsar brokers over our bookies: the `ci` rows of tests/pulsar/expected-pass.txt
#      (tests/pulsar/run.sh --ratchet --impl rust --ci; TLS, ordered, bookie / broker / all killed).
# Environment knobs: SKIP_FUZZ=1, SKIP_INTEROP=1, SKIP_PULSAR=1 (for local iteration only; CI sets neither),
#   FUZZ_WIRE_SECONDS (60), FUZZ_OTHER_SECONDS (20).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Each stage also prints how full the disk is: a bookie over diskUsageThreshold is read-only,
# and a CI log should show whether the machine's disk was.
stage() {
    echo
    echo "== [$(( $(date +%s) - start ))s] $*"
    df -h . "${TMPDIR:-/tmp}" 2>/dev/null | awk 'NR > 1 { print "   disk: " $0 }' || true
}

stage "prerequisites"
scripts/zk.sh install
# Tests that need these must fail, not skip, here.
export BK_REQUIRE_ZK=1 BK_REQUIRE_URING=1 BK_REQUIRE_LOOP=1

stage "cargo fmt --check"
cargo fmt --all -- --check

stage "every citation resolves to a file and section in docs/"
scripts/check-citations.sh

stage "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

stage "cargo test"
cargo test --workspace

stage "bkbench against the real bookie binary"
BOOKIE_BIN="$PWD/target/debug/bookie" cargo test -p bkbench --test real_bookie -- --ignored

stage "chaos drills (benches/chaos/, bkchaos against the real bookie, and its verifier failing a broken one)"
# One drill at a time: each starts three bookies.
BOOKIE_BIN="$PWD/target/debug/bookie" cargo test -p bkbench --test chaos_drills -- --ignored --test-threads=1

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
    stage "fuzz smoke (wire decoders)"
    FUZZ_SECONDS="${FUZZ_WIRE_SECONDS:-60}" scripts/fuzz-smoke.sh v2_request v3_request frame
    stage "fuzz smoke (responses, journal, segments, cookies, config, ZooKeeper metadata, cert roles, JKS stores, chaos fault specs)"
    FUZZ_SECONDS="${FUZZ_OTHER_SECONDS:-20}" scripts/fuzz-smoke.sh v2_response v3_response \
        journal_record journal_replay segment_footer segment_index ledger_state \
        cookie_text properties zk_metadata cert_roles jks_store chaos_spec
fi

if [ "${SKIP_INTEROP:-0}" != 1 ]; then
    stage "Java conformance suite"
    # The debug bookie `cargo test` just built: it passes the same pairs, and a release
    # build from scratch would cost CI ten more minutes on two cores.
    INTEROP_RUST_PROFILE=dev tests/interop/run.sh --impl both
    stage "chaos drills side by side: bookie-rs and the stock Java bookie (benches/chaos/side-by-side.sh)"
    # kill -9 loop, hung bookie and the 30 s ZooKeeper outage against each, in a ZooKeeper
    # of their own; every run must lose nothing and have no problem (docs/chaos.md §7).
    BOOKIE_BIN="$PWD/target/debug/bookie" BKCHAOS="$PWD/target/debug/bkchaos" \
        benches/chaos/side-by-side.sh "$(mktemp -d "${TMPDIR:-/tmp}/bk-side-by-side.XXXXXX")"
fi
if [ "${SKIP_PULSAR:-0}" != 1 ]; then
    stage "stock Pulsar brokers over our bookies (tests/pulsar ratchet, rust rows marked ci)"
    # A stock Pulsar 4.0.7 broker over 3-4 debug-build bookies per row: TLS with chunked 10 and
    # 100 MiB messages, 2,000 ordered messages, a bookie / the broker / everything SIGKILLed and
    # restarted; which rows and how long: tests/pulsar/README.md ("What CI runs").
    BOOKIE_BIN="$PWD/target/debug/bookie" tests/pulsar/run.sh --ratchet --impl rust --ci
fi
stage "all tests passed"
