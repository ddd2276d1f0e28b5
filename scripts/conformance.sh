#!/usr/bin/env bash
# Ours against the original (gatewaysdk 0.3.2), side by side:
#   1. compile parity: every template the original ships compiles to the same bytes;
#   2. differential serving: the public worlds and ours (tests/conformance) answer every
#      scripted request as the original does.
#   scripts/conformance.sh [PATH_TO_OUR_GATEWAY]
# Needs ../shared (the conformance kit) and network access to PyPI for the original;
# skipped with a notice when the kit is absent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared="$here/../shared"
ours=${1:-${CARGO_TARGET_DIR:-$here/target}/release/gateway}
if [ ! -d "$shared/conformance" ]; then
  echo "conformance: $shared/conformance not found; skipped"
  exit 0
fi
ref=$("$shared/reference/install.sh")
python3 "$shared/conformance/compile_parity.py" --ours "$ours" --ref "$ref" | tail -1
GATEWAY_REFERENCE="$ref" bash "$here/tests/conformance/run.sh" "$ours"
python3 "$shared/conformance/diffserve.py" --world "$here/examples/helpdesk" --script "$here/examples/helpdesk.requests.json" --ours "$ours" --ref "$ref" | tail -1
