#!/usr/bin/env bash
# Smoke-runs cargo-fuzz targets (fuzz/fuzz_targets/*.rs) for a fixed time each and fails if
# any target finds a crash, panic, leak or timeout.
#
# Usage: scripts/fuzz-smoke.sh [TARGET...]     (no TARGET: every target `cargo fuzz list` shows)
# Env:   FUZZ_SECONDS   seconds per target (default 60)
#        FUZZ_TOOLCHAIN "nightly" (default when `cargo +nightly` works) or "stable" (uses
#                       RUSTC_BOOTSTRAP=1 so stable rustc accepts the -Z sanitizer flags)
# Installs cargo-fuzz with `cargo install cargo-fuzz` when it is missing.
# Crash inputs land in fuzz/artifacts/<target>/ (git-ignored); reproduce one with
#   cd fuzz && cargo +nightly fuzz run <target> artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz
fi

toolchain=()
case "${FUZZ_TOOLCHAIN:-auto}" in
    nightly) toolchain=(+nightly) ;;
    stable) export RUSTC_BOOTSTRAP=1 ;;
    auto)
        if cargo +nightly --version >/dev/null 2>&1; then
            toolchain=(+nightly)
        else
            export RUSTC_BOOTSTRAP=1
        fi
        ;;
    *) echo "FUZZ_TOOLCHAIN must be nightly, stable or unset" >&2; exit 2 ;;
esac

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo "${toolchain[@]}" fuzz list)
fi

failed=()
for t in "${targets[@]}"; do
    echo "== fuzz $t for ${FUZZ_SECONDS}s"
    mkdir -p "corpus/$t"
    # Committed seeds (fuzz/seeds/<target>/), for formats whose magic and digests random
    # bytes would take long to reach.
    if [ -d "seeds/$t" ]; then cp -n "seeds/$t"/* "corpus/$t"/; fi
    if ! cargo "${toolchain[@]}" fuzz run "$t" -- -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=4096; then
        failed+=("$t")
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz-smoke: findings in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz-smoke: ${#targets[@]} target(s) ran ${FUZZ_SECONDS}s each without findings"
