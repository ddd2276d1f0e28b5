#!/usr/bin/env bash
# Fuzz the example world's served API with schemathesis against the OpenAPI document
# the world serves itself (GET /openapi.json): no 5xx, and every answer as the document
# says (status, content type, body, headers). The same runs as
# crates/cli/tests/schemathesis.rs, by hand and with more examples.
#   scripts/schemathesis.sh [PATH_TO_OUR_GATEWAY] [MAX_EXAMPLES]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
gateway=${1:-${CARGO_TARGET_DIR:-$here/target}/release/gateway}
examples=${2:-200}
venv="$HOME/.cache/gateway-schemathesis-venv"
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check 'schemathesis>=4.32,<5'
fi
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$here/examples/helpdesk" "$work/world"
"$gateway" worlds schema compile "$work/world" >/dev/null
GATEWAY_WORLD_CLOCK=1767225600 "$gateway" worlds serve "$work/world" --port 0 2>"$work/log" &
server=$!
for _ in $(seq 100); do grep -q '^world api listening on ' "$work/log" 2>/dev/null && break; sleep 0.1; done
address=$(sed -n 's/^world api listening on //p' "$work/log" | head -1)
cd "$work"
st() { "$venv/bin/st" run "$address/openapi.json" --max-examples "$examples" --workers 1 --generation-database none "$@"; }
st --mode positive -H "Authorization: Bearer t" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance
# A request the document calls invalid may reach another route: held to no body schema.
st --mode negative -H "Authorization: Bearer t" --checks not_a_server_error,status_code_conformance,content_type_conformance
curl -sf "$address/healthz" >/dev/null && echo "server still serving"
