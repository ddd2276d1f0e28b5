#!/usr/bin/env bash
# Compile parity against the original (gatewaysdk 0.3.2): every template the original
# ships, initialized by the original, must compile to the same bytes with ours.
#   scripts/conformance.sh [PATH_TO_OUR_GATEWAY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared="$here/../shared"
ours=${1:-${CARGO_TARGET_DIR:-$here/target}/release/gateway}
if [ ! -d "$shared/conformance" ]; then
  echo "conformance: $shared/conformance not found; skipped"
  exit 0
fi
ref=$("$shared/reference/install.sh")
python3 "$shared/conformance/compile_parity.py" --ours "$ours" --ref "$ref"
