#!/usr/bin/env bash
# Ours against the original (gatewaysdk 0.3.2), side by side:
#   1. the 14 templates: compile parity (every template the original ships compiles to the
#      same bytes) and init parity (ours writes the original's files, byte for byte);
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

# 1. Every template, all 14 of them (the original's 13 vendor templates and custom):
#    compile parity (the original inits, ours compiles its copy to the same bytes and checks
#    the original's own), then init parity (ours inits each template; every file it writes
#    equals the original's init of it, byte for byte). A template the original lists but ours
#    does not, one compile_parity skips, or a count other than 14, is a failure.
work=$(mktemp -d "${TMPDIR:-/tmp}/conformance-templates.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! python3 "$shared/conformance/compile_parity.py" --ours "$ours" --ref "$ref" --keep "$work" >"$work/compile.log"; then
  cat "$work/compile.log"
  exit 1
fi
tail -1 "$work/compile.log"
theirs=$("$ref" worlds schema templates)
mine=$("$ours" worlds schema templates)
count=$(printf '%s\n' "$theirs" | grep -c .)
if [ "$mine" != "$theirs" ] || [ "$count" != 14 ] || ! grep -qx "14 passed, 0 failed" "$work/compile.log"; then
  echo "templates: ours list $(printf '%s\n' "$mine" | grep -c .), the original $count; compile parity: $(tail -1 "$work/compile.log")"
  exit 1
fi
passed=0 failed=0
for template in $theirs; do
  # compile_parity kept the original's init of each template (--name TEMPLATE) as TEMPLATE-ref.
  if "$ours" worlds schema init "$work/$template-init" --connector "$template" --name "$template" --no-api >/dev/null \
    && diff -r "$work/$template-ref" "$work/$template-init" >"$work/$template.diff"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL init parity $template"
    head -20 "$work/$template.diff"
  fi
done
echo "init parity: $passed passed, $failed failed"
[ "$failed" = 0 ]
GATEWAY_REFERENCE="$ref" bash "$here/tests/conformance/run.sh" "$ours"
python3 "$shared/conformance/diffserve.py" --world "$here/examples/helpdesk" --script "$here/examples/helpdesk.requests.json" --ours "$ours" --ref "$ref" | tail -1
