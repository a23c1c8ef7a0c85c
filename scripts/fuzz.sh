#!/usr/bin/env bash
# Runs every cargo-fuzz target of the core for a number of executions each (default 200000).
# Usage: scripts/fuzz.sh [runs-per-target]   — needs the nightly toolchain (on the machine) and cargo-fuzz.
set -euo pipefail
source "$(dirname "$0")/tools.sh"
cd "$PROJECT_ROOT/fuzz"
runs="${1:-200000}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked >&2
for target in $(cargo +nightly fuzz list); do
  mkdir -p "corpus/$target"
  say "fuzzing $target for $runs runs"
  cargo +nightly fuzz run "$target" "corpus/$target" -- -runs="$runs" -max_len=4096 2>&1 |
    grep -E "^(#[0-9]+\s+DONE|Done [0-9]+ runs|==[0-9]+==|thread .* panicked|SUMMARY)" || true
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "fuzz target $target FAILED (see fuzz/artifacts/$target)"; exit 1; }
done
echo "fuzzing: every target ran $runs executions without a panic"
