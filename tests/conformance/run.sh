#!/usr/bin/env bash
# Differential serving checks, ours against the original gateway (gatewaysdk 0.3.2):
#
#   tests/conformance/run.sh OURS [NAME...]
#
# Runs every request script in tests/conformance/worlds/ (and the public ones in
# /work/shared/conformance/worlds/ when present) through diffserve.py, printing each
# run's last line ("N passed, M failed"); exits non-zero when any run fails.
# NAME... limits the runs to those worlds.
#
# A world's runs are listed in worlds/<name>.args, one run per line: the extra diffserve
# arguments (--scenario NAME, --api-key KEY), "-" for a run without any, '#' comments.
# Without an .args file the world runs once with no extra arguments. One more argument is
# ours, not diffserve's: "--precompile ref|ours" compiles a scratch copy of the world with
# that binary first (worlds/ carries no snapshots), so db/state.sqlite and the scenario
# snapshots exist and overlay seeds run against a real base digest.
#
# Environment: GATEWAY_REFERENCE (the original's gateway; default
# ~/.cache/gateway-reference/bin/gateway, else ../reference/install.sh's answer),
# DIFFSERVE (default: diffserve.py beside this script, else /work/shared/conformance/),
# KEEP_LOGS=1 keeps every run's full output (failing runs' logs are always kept).
set -u
here=$(cd "$(dirname "$0")" && pwd)
ours=${1:?usage: run.sh PATH_TO_OUR_GATEWAY [WORLD...]}
shift
case "$ours" in /*) ;; *) ours="$PWD/$ours" ;; esac
[ -x "$ours" ] || { echo "run.sh: $ours is not executable" >&2; exit 2; }
only=" $* "

shared=/work/shared/conformance
ref=${GATEWAY_REFERENCE:-}
if [ -z "$ref" ]; then
  if [ -x "$HOME/.cache/gateway-reference/bin/gateway" ]; then
    ref="$HOME/.cache/gateway-reference/bin/gateway"
  elif [ -x "$shared/../reference/install.sh" ]; then
    ref=$("$shared/../reference/install.sh")
  fi
fi
[ -n "$ref" ] && [ -x "$ref" ] || { echo "run.sh: the original gateway was not found; set GATEWAY_REFERENCE" >&2; exit 2; }

diffserve=${DIFFSERVE:-}
for candidate in "$here/diffserve.py" "$shared/diffserve.py"; do
  [ -z "$diffserve" ] && [ -f "$candidate" ] && diffserve=$candidate
done
[ -n "$diffserve" ] || { echo "run.sh: diffserve.py not found; set DIFFSERVE" >&2; exit 2; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gateway-conformance.XXXXXX")
logs="$scratch/logs"
mkdir -p "$logs"
status=0
runs=0

run_one() { # world_dir script label args...
  local world=$1 script=$2 label=$3
  shift 3
  local precompile="" args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --precompile) precompile=${2:-}; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  local log="$logs/$(echo "$label" | tr -c 'A-Za-z0-9_.-' '_').log"
  if [ -n "$precompile" ]; then
    local compiler
    case "$precompile" in
      ref) compiler=$ref ;;
      ours) compiler=$ours ;;
      *) echo "run.sh: --precompile takes ref or ours, not '$precompile'" >&2; status=1; return ;;
    esac
    local copy="$scratch/precompiled-$runs/$(basename "$world")"
    mkdir -p "$(dirname "$copy")"
    cp -R "$world" "$copy"
    chmod -R u+w "$copy"
    if ! "$compiler" worlds schema compile "$copy" >"$log" 2>&1; then
      printf '%-58s %s\n' "$label" "precompile with $precompile failed (see $log)"
      status=1
      return
    fi
    world=$copy
  fi
  python3 "$diffserve" --world "$world" --script "$script" --ours "$ours" --ref "$ref" ${args[@]+"${args[@]}"} >"$log" 2>&1
  local rc=$?
  local last
  last=$(tail -n 1 "$log")
  if [ $rc -ne 0 ] || ! echo "$last" | grep -Eq '^[0-9]+ passed, 0 failed$'; then
    status=1
    last="$last   (log: $log)"
  elif [ "${KEEP_LOGS:-}" != "1" ]; then
    rm -f "$log"
  fi
  printf '%-58s %s\n' "$label" "$last"
  runs=$((runs + 1))
}

run_world() { # dir_of_worlds name
  local dir=$1 name=$2
  local world="$dir/$name" script="$dir/$name.requests.json" argsfile="$dir/$name.args"
  [ -d "$world" ] || return
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then
    return
  fi
  if [ ! -f "$argsfile" ]; then
    run_one "$world" "$script" "serve $name"
    return
  fi
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    line=$(echo "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
    [ -z "$line" ] && continue
    if [ "$line" = "-" ]; then
      run_one "$world" "$script" "serve $name"
    else
      # shellcheck disable=SC2086 # the line is a word list by design
      run_one "$world" "$script" "serve $name $line" $line
    fi
  done <"$argsfile"
}

for dir in "$shared/worlds" "$here/worlds"; do
  [ -d "$dir" ] || continue
  for script in "$dir"/*.requests.json; do
    [ -e "$script" ] || continue
    name=$(basename "$script" .requests.json)
    run_world "$dir" "$name"
  done
done

if [ "$runs" -eq 0 ] && [ $status -eq 0 ]; then
  echo "run.sh: no runs matched" >&2
  status=2
fi
if [ $status -eq 0 ] && [ "${KEEP_LOGS:-}" != "1" ]; then
  rm -rf "$scratch"
else
  rm -rf "$scratch"/precompiled-*
fi
exit $status
