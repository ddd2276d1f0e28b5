#!/usr/bin/env bash
# The invariants of ARCHITECTURE.md that a machine can check (run by .ci/run):
# - the world engine stays synchronous and free of HTTP and CLI: gateway-world
#   depends on none of tokio, axum, hyper, reqwest, clap;
# - the World Host depends on no platform crate (gateway-hub, gateway-cli) and has
#   no HTTP client of its own;
# - lower crates know nothing of upper ones (serve and connector never on hub/cli;
#   the runner above the host and the hub's clients, below the CLI);
# - the hub is split by concern: the bundle format (gateway-bundle) and the rubric judge
#   (gateway-judge) are leaves both sides use; the server (gateway-hub) and its store
#   (gateway-hub-store) never depend on the clients (gateway-hub-client), the store
#   never on the server (nor axum), and the runner never on the server;
# - conformance sits above serve and below the platform; test support is for tests
#   only: no crate depends on it outside [dev-dependencies];
# - every source file starts with a `//!` saying what it is;
# - no file over 800 lines and no circle between the files of a crate, except those
#   listed with their reason in scripts/architecture-allow.txt (scripts/check_files.py);
# - no crate declares a dependency it does not use (cargo-machete).
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0

forbid() { # crate, then the dependencies it must not have (anywhere below it)
  local crate=$1; shift
  local deps
  deps=$(cargo tree -p "$crate" -e normal --prefix none ${DEPTH:+--depth $DEPTH})
  for dep in "$@"; do
    if grep -qE "^$dep v" <<<"$deps"; then
      echo "architecture: $crate depends on $dep (see ARCHITECTURE.md, Invariants)"
      fail=1
    fi
  done
}
# The sandbox is a leaf too: it runs commands and knows nothing of worlds or servers.
forbid gateway-sandbox tokio axum hyper reqwest clap serde_json gateway-common gateway-world gateway-connector gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli
# Copy-on-write storage is a leaf under serve: SQLite's VFS, no gateway crate, nothing async.
forbid gateway-cow tokio axum hyper reqwest clap serde_json gateway-common gateway-world gateway-connector gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli
# The shared leaf depends on no gateway crate and nothing async or HTTP.
forbid gateway-common tokio axum hyper reqwest clap serde_json gateway-world gateway-connector gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli
forbid gateway-world tokio axum hyper reqwest clap gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli
forbid gateway-connector gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli clap axum
forbid gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli clap
forbid gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli clap
# The bundle format is shared by the hub's server and its clients: synchronous, no HTTP,
# below everything that serves, calls or runs.
forbid gateway-bundle tokio axum hyper reqwest clap gateway-connector gateway-serve gateway-host gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli
# The rubric judge calls a model and nothing else: no server, no hub, no bundle.
forbid gateway-judge axum clap gateway-connector gateway-serve gateway-host gateway-bundle gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli
# The hub's clients call a hub over HTTP: they are not the hub, the host or the judge.
forbid gateway-hub-client gateway-host gateway-judge gateway-hub-store gateway-hub gateway-runner gateway-cli clap
# The hub (server and store) knows nothing of its clients, nor of the runner.
forbid gateway-hub gateway-hub-client gateway-runner gateway-cli clap
# The store knows nothing of the server: not gateway-hub, not axum (nor its web pages'
# templates), not the World Host the server runs sessions on. (hyper and reqwest are
# there, inside object_store's S3 client: an HTTP client, not a server.)
forbid gateway-hub-store gateway-hub axum maud gateway-serve gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-runner gateway-cli clap
# The runner sits above the host and the hub's clients, below the CLI: it parses no
# arguments and reaches the hub only through its clients, never the server crate.
forbid gateway-runner gateway-hub-store gateway-hub gateway-cli clap
# Conformance calls the served world in-process: above serve, below the platform.
forbid gateway-conform gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli clap
# Test support drives the binaries and servers from outside: it knows nothing of the CLI's insides.
forbid gateway-test-support gateway-runner gateway-cli clap
for crate in gateway-common gateway-sandbox gateway-cow gateway-world gateway-connector gateway-serve gateway-conform gateway-host gateway-bundle gateway-judge gateway-hub-client gateway-hub-store gateway-hub gateway-runner gateway-cli; do
  forbid "$crate" gateway-test-support
done
# The host fetches through functions its caller gives: no HTTP client of its own.
DEPTH=1 forbid gateway-host reqwest hyper

for file in $(git ls-files 'crates/*.rs' | grep '/src/'); do
  if ! head -c 3 "$file" | grep -q '//!'; then
    echo "architecture: $file does not start with a //! saying what it is"
    fail=1
  fi
done

python3 scripts/check_files.py || fail=1

# Unused dependencies: cargo-machete reads each crate's sources for the crates its
# Cargo.toml names. Installed on first use (crates.io is reachable from CI).
if ! command -v cargo-machete >/dev/null 2>&1; then
  cargo install cargo-machete --locked --quiet >/dev/null 2>&1 || echo "architecture: cargo-machete could not be installed"
fi
if command -v cargo-machete >/dev/null 2>&1; then
  cargo machete >/tmp/machete.$$ 2>&1 || { cat /tmp/machete.$$; echo "architecture: unused dependencies (cargo machete)"; fail=1; }
  rm -f /tmp/machete.$$
else
  fail=1
fi
exit $fail
