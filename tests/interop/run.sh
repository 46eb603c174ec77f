#!/usr/bin/env bash
# Runs the bookie-rs Java conformance suite.
#   tests/interop/run.sh [--impl java|rust|both] [--scenario N[,N...]] [--mode v2|v3] [--keep]
# Builds the Rust bookie (cargo build --release -p bookie; INTEROP_RUST_PROFILE=dev for a debug
# build) unless BOOKIE_BIN is set or only the java implementation is selected, builds the Maven project (offline when ~/.m2 already has
# everything), then runs every scenario x implementation x mode and prints the result table.
# The last line is `N passed, N failed`; the exit code is non-zero iff a required pair failed
# (every java pair, and the rust pairs listed in tests/interop/expected-pass.txt).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

IMPL=both
for ((i = 1; i <= $#; i++)); do
  if [[ "${!i}" == "--impl" ]]; then j=$((i + 1)); IMPL="${!j:-both}"; fi
done

# INTEROP_RUST_PROFILE=dev reuses the debug build `cargo test` already made (the release build
# of the bookie took ~13 min on this shared 2-core machine); default: release.
PROFILE="${INTEROP_RUST_PROFILE:-release}"
if [[ "$IMPL" != "java" && -z "${BOOKIE_BIN:-}" ]]; then
  echo "interop: building the Rust bookie (cargo build --profile $PROFILE -p bookie)"
  if (cd "$ROOT" && cargo build --profile "$PROFILE" -p bookie); then
    # Resolve the binary where cargo put it (CARGO_TARGET_DIR may point elsewhere).
    TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
    OUT_DIR="$PROFILE"; [[ "$PROFILE" == "dev" ]] && OUT_DIR=debug
    if [[ -x "$TARGET_DIR/$OUT_DIR/bookie" ]]; then export BOOKIE_BIN="$TARGET_DIR/$OUT_DIR/bookie"; fi
  else
    echo "interop: cargo build --release -p bookie FAILED; rust pairs will fail (the suite still runs java)"
    export BOOKIE_BIN="$ROOT/target/release/bookie-build-failed"
  fi
fi

echo "interop: building the Maven project"
cd "$HERE"
if ! mvn -B -q -o package 2>/dev/null; then
  # First run on this machine (or a new dependency): resolve online once, offline afterwards.
  mvn -B -q package
fi

JAVA_OPTS=(-Xmx1g -XX:MaxDirectMemorySize=1g -XX:+UseParallelGC)
exec java "${JAVA_OPTS[@]}" -Dinterop.dir="$HERE" -Drepo.root="$ROOT" \
  -cp "$HERE/target/classes:$HERE/target/lib/*" bookiers.interop.Suite "$@"
