#!/usr/bin/env bash
# Fuzz the example world's served API with schemathesis against its own generated
# OpenAPI document (`gateway worlds schema api-bundle`): no answer may be a 5xx.
#   scripts/schemathesis.sh [PATH_TO_OUR_GATEWAY] [MAX_EXAMPLES]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
gateway=${1:-${CARGO_TARGET_DIR:-$here/target}/release/gateway}
examples=${2:-100}
venv="${XDG_CACHE_HOME:-$HOME/.cache}/schemathesis-venv"
[ -x "$venv/bin/schemathesis" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q schemathesis; }
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$here/examples/helpdesk" "$work/world"
"$gateway" worlds schema api-bundle "$work/world" --out "$work/bundle" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
GATEWAY_WORLD_CLOCK=1767225600 "$gateway" worlds serve "$work/world" --port "$port" 2>/dev/null &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
"$venv/bin/schemathesis" run "$work/bundle/openapi.json" --url "http://127.0.0.1:$port/api/v2" \
  -H "Authorization: Bearer t" --checks not_a_server_error --max-examples "$examples"
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && echo "server still serving"
