#!/usr/bin/env python3
"""Learn the built-in connector templates from the original's output.

    scripts/templates_from_reference.py [--ref REF_GATEWAY] [--out crates/world/templates]

For each template the original lists (`gateway worlds schema templates`), the original
initialises a world (`schema init W --connector T`); the authored files of that world are
mapped back into the template layout our `schema init` reads (crates/world/src/scaffold.rs):

    schema/world.json      -> T/world.json        (the package id is replaced at init)
    tools/handlers.py      -> T/handlers.py
    schema/<supporting>    -> T/<supporting>      (.json/.md/.toml that the compiler does not generate)
    connector.toml         -> T/connector.toml
    schema/base.json       -> base.json           (shared by every template)

Anything else the original writes is generated (lock, runtime, README, db/, tool-schemas) or
written by `init` itself (gateway-env.toml, verifiers/, data/). Run it when the original's
templates change; `cargo test -p gateway-cli --test templates` then checks byte parity.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GENERATED = {"base.json", "world.json", "lock.json", "runtime.json", "README.md"}
WRITTEN_BY_INIT = {"gateway-env.toml", "tool-schemas.json", "verifiers/state_present.sql", "data/records.json", "data/initial.json"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", default=os.environ.get("GATEWAY_REFERENCE", os.path.expanduser("~/.cache/gateway-reference/bin/gateway")))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "crates/world/templates")
    args = parser.parse_args()
    listed = subprocess.run([args.ref, "worlds", "schema", "templates"], capture_output=True, text=True, check=True)
    templates = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    work = Path(tempfile.mkdtemp(prefix="templates-"))
    try:
        for template in templates:
            world = work / template
            subprocess.run([args.ref, "worlds", "schema", "init", str(world), "--connector", template], capture_output=True, check=True)
            target = args.out / template
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for path in sorted(p for p in world.rglob("*") if p.is_file()):
                relative = path.relative_to(world).as_posix()
                if relative == "schema/world.json":
                    shutil.copyfile(path, target / "world.json")
                elif relative == "tools/handlers.py":
                    shutil.copyfile(path, target / "handlers.py")
                elif relative == "connector.toml":
                    shutil.copyfile(path, target / "connector.toml")
                elif relative == "schema/base.json":
                    shutil.copyfile(path, args.out / "base.json")
                elif relative.startswith("schema/") and relative.count("/") == 1 and path.name not in GENERATED:
                    shutil.copyfile(path, target / path.name)
                elif relative.startswith("db/") or relative in WRITTEN_BY_INIT or relative.startswith("schema/"):
                    continue
                else:
                    print(f"{template}: unexpected file {relative}", file=sys.stderr)
                    return 1
            print(f"{template}: {sum(1 for _ in target.iterdir())} files")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
