#!/usr/bin/env bash
# Run every fuzz target (fuzz/fuzz_targets/*.rs) for FUZZ_SECONDS seconds each
# (default 60), one after the other; the first crash, panic or hang fails the run,
# and libFuzzer leaves the input under fuzz/artifacts/<target>/ (keep it as a
# regression unit test in the crate that owns the parser, then fix the parser).
#
#   scripts/fuzz.sh                   every target, 60 s each
#   FUZZ_SECONDS=20 FUZZ_SEED=1 scripts/fuzz.sh   what .ci/run does (a fixed seed: the
#                                  same inputs each run, so CI does not turn red at random)
#   scripts/fuzz.sh router json       only these
#
# cargo-fuzz drives the build; it is installed on first use. On the stable toolchain
# RUSTC_BOOTSTRAP=1 admits the `-Z` flags libFuzzer's instrumentation needs, and no
# sanitizer is built in (`--sanitizer none`: Rust code is memory-safe; a panic, a
# stack overflow, an out-of-memory or a timeout are what is looked for). Without
# cargo-fuzz the script says so in a NOTICE and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"

if ! cargo fuzz --help >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --quiet >/dev/null 2>&1 || true
fi
if ! cargo fuzz --help >/dev/null 2>&1; then
  echo "NOTICE: cargo-fuzz could not be installed; the fuzz targets were not run"
  exit 0
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi
export RUSTC_BOOTSTRAP=1
# Fuzz builds use their own flags: keep them apart from the ordinary build's artifacts.
target_dir="${CARGO_TARGET_DIR:-$PWD/target}/fuzz"
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus"
  echo "fuzz: $target for ${seconds}s"
  (cd fuzz && cargo fuzz run "$target" --sanitizer none --target-dir "$target_dir" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} "corpus/$target" "seeds/$target")
done
