#!/usr/bin/env python3
"""Peak memory (max RSS) and disk of big worlds and hostile pulls, one process at a time.

    scripts/big_worlds.py --gateway target/release/gateway [--only compile import pull]
        [--world-mb 40] [--data-mb 50] [--rows 4900] [--bomb-mb 1800] [--work DIR]

Generates its inputs under a scratch directory (removed afterwards unless --keep):

* compile — a schema world whose schema/world.json is ~--world-mb MB: many entities of a
  few dozen described properties each, each entity related to the one before it.
  Measured: `gateway worlds schema compile WORLD`.
* import — the helpdesk example with a data/initial.json of ~--data-mb MB (customers and
  tickets), compiled first (not measured), then --rows new tickets as tagged JSONL.
  Measured: `gateway worlds data import WORLD rows.jsonl`.
* pull — a gzip bomb: one tar member of --bomb-mb MB of zeros (a ~1000× ratio), uploaded
  to a `gateway hub serve` on loopback through the hub's API, then
  `gateway bench pull bomb -t OUT`. Measured: the pull's max RSS, its exit status and
  what it left on disk (a refusal should leave nothing).

Each command runs under `/usr/bin/time -v`; the script prints one Markdown row per
measurement (wall time, max RSS, exit status, input size, bytes left on disk).
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1000 * 1000


# ------------------------------------------------------------------ measuring

def measured(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run argv under /usr/bin/time -v: wall seconds, max RSS in MiB, exit status, output tails."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)
    wall = time.perf_counter() - started
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    status = re.search(r"Exit status: (\d+)", done.stderr)
    said = "\n".join(line for line in done.stderr.splitlines()
                     if not line.startswith("\t") and not line.startswith("Command exited")).strip()
    return {
        "wall": wall,
        "rss_mib": int(rss.group(1)) / 1024 if rss else float("nan"),
        "status": int(status.group(1)) if status else done.returncode,
        "stdout": done.stdout[-400:],
        "stderr": said[-400:],
    }


def disk_bytes(path: Path) -> int:
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def report(label: str, size: int, result: dict, left: int | None = None) -> None:
    left_text = "—" if left is None else f"{left / MB:.1f} MB"
    print(f"| {label} | {size / MB:.1f} MB | {result['wall']:.1f} s | {result['rss_mib']:.0f} MiB | "
          f"{result['status']} | {left_text} |", flush=True)
    if result["status"] != 0:
        said = (result["stderr"] or result["stdout"]).strip().splitlines()
        print(f"|   ↳ said: {said[-1][:300] if said else '(nothing)'} | | | | | |", flush=True)


# ------------------------------------------------------------------ compile: a big world.json

def big_schema_world(into: Path, target_mb: float, gateway: str) -> int:
    """A schema world whose world.json is ~target_mb MB and whose data/initial.json seeds
    one row into each of its first entities; returns world.json's size in bytes. (A
    first compile, not measured, gives the domain the data must target.)"""
    (into / "schema").mkdir(parents=True)
    (into / "gateway-env.toml").write_text(
        '[environment]\nname = "big"\nkind = "mock-tools"\ndb = "sqlite"\n\n'
        '[schema]\nlanguage = "gateway-world/1"\n\n[tools]\nserve = []\n\n[db]\nengine = "sqlite"\n')
    properties = 40
    blurb = "A generated property of a generated entity, described at some length as real vendor schemas are. "
    entity_bytes = properties * (len(blurb) * 2 + 120) + 500
    count = max(2, int(target_mb * MB / entity_bytes))
    # A shared definition every entity uses twice, inlined where it is used (as vendor
    # schemas reuse addresses and audit stamps): resolved entities outgrow the text.
    audit = {"type": "object", "additionalProperties": False,
             "properties": {f"stamp_{a:02d}": {"type": "string", "maxLength": 80, "description": blurb} for a in range(12)}}
    defs, entities = {"Audit": audit}, {}
    for e in range(count):
        name = f"Entity{e:05d}"
        props = {"id": {"type": "string", "minLength": 1, "maxLength": 64, "description": f"Identifier of {name}."}}
        for p in range(properties):
            kind = ("string", "integer", "boolean", "number")[p % 4]
            prop = {"type": kind, "description": f"{blurb}{blurb}Field {p} of {name}."}
            if kind == "string":
                prop["maxLength"] = 200 + p
            props[f"field_{p:02d}"] = prop
        props["created"] = {"$ref": "#/$defs/Audit"}
        props["updated"] = {"$ref": "#/$defs/Audit"}
        required = ["id"]
        if e:
            props["parent_id"] = {"type": "string", "minLength": 1, "maxLength": 64}
            required.append("parent_id")
        defs[name] = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
        entity = {"schema": {"$ref": f"#/$defs/{name}"}, "primary_key": ["id"], "unique": [], "relationships": []}
        if e:
            entity["relationships"] = [{"fields": ["parent_id"], "target": f"e{e - 1:05d}", "on_delete": "restrict"}]
        entities[f"e{e:05d}"] = entity
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:gateway-rs:bench:big",
        "$defs": defs,
        "x-gateway": {"version": 1, "domain_version": "1.0.0", "package": {"id": "big", "version": "1.0.0"},
                      "entities": entities, "tools": {}},
    }
    text = json.dumps(document, indent=1)
    (into / "schema/world.json").write_text(text)
    subprocess.run([gateway, "worlds", "schema", "compile", str(into)], capture_output=True)
    runtime = json.loads((into / "schema/runtime.json").read_text())
    mutations = []
    for e in range(min(count, 100)):
        row = {"id": f"r{e}", **{f"field_{p:02d}": value(p) for p in range(properties)}}
        if e:
            row["parent_id"] = f"r{e - 1}"
        mutations.append({"entity": f"e{e:05d}", "op": "insert", "source": {"record": f"bench:{e}"}, "value": row})
    batch = {"coverage": "partial", "id": "big.initial.v1", "mapping": {"id": "bench", "version": "1"},
             "mutations": mutations, "target": runtime["domain"]}
    (into / "data").mkdir(exist_ok=True)
    (into / "data/initial.json").write_text(json.dumps(batch, indent=1, sort_keys=True) + "\n")
    for generated in ("schema/lock.json", "schema/runtime.json", "schema/README.md", "db/schema.sql", "tool-schemas.json"):
        (into / generated).unlink(missing_ok=True)
    return len(text)


def value(p: int):
    """A value of property field_<p>'s type."""
    return ("text", p, p % 2 == 0, p + 0.5)[p % 4]


# ------------------------------------------------------------------ import: a big data/initial.json

def customer(i: int) -> dict:
    return {"id": f"C{i}", "name": f"Customer number {i}", "email": f"customer{i}@example.com",
            "tier": ("free", "pro", "enterprise")[i % 3], "created_at": "2026-01-02T09:00:00Z"}


def ticket(i: int, customers: int) -> dict:
    return {"id": 1000 + i, "customer_id": f"C{i % customers}", "subject": f"Ticket {i}: the printer is on fire again",
            "status": ("open", "pending", "solved")[i % 3], "priority": 1 + i % 4, "tags": ["bench", f"t{i % 7}"],
            "assignee": None if i % 2 else f"agent{i % 13}", "opened_at": "2026-03-01T10:00:00Z"}


def big_data_world(into: Path, target_mb: float) -> tuple[int, int, int]:
    """helpdesk with a ~target_mb MB data/initial.json: (its size, customers, tickets)."""
    shutil.copytree(ROOT / "examples/helpdesk", into, ignore=shutil.ignore_patterns("state.sqlite", "state.json"))
    per_row = 366  # bytes of one mutation as json.dumps(indent=1, sort_keys=True) writes it
    rows = max(10, int(target_mb * MB / per_row))
    customers = max(1, rows // 5)
    tickets = rows - customers
    mutations = [{"entity": "customers", "op": "insert", "source": {"record": f"bench:customer:{i}"}, "value": customer(i)}
                 for i in range(customers)]
    mutations += [{"entity": "tickets", "op": "insert", "source": {"record": f"bench:ticket:{i}"}, "value": ticket(i, customers)}
                  for i in range(tickets)]
    batch = {"coverage": "partial", "id": "helpdesk.initial.v1", "mapping": {"id": "bench", "version": "1"},
             "mutations": mutations, "target": None}
    # The batch targets the compiled contract's domain: take it from runtime.json.
    runtime = json.loads((into / "schema/runtime.json").read_text())
    batch["target"] = runtime["domain"]
    text = json.dumps(batch, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    (into / "data/initial.json").write_text(text)
    return len(text), customers, tickets


def import_rows(path: Path, rows: int, customers: int, first: int) -> int:
    with path.open("w") as out:
        for i in range(rows):
            out.write(json.dumps({"entity": "tickets", "row": ticket(first + i, customers)}) + "\n")
    return path.stat().st_size


# ------------------------------------------------------------------ pull: a gzip bomb on a hub

def gzip_bomb(path: Path, member_bytes: int) -> int:
    """A .tar.gz of one member of `member_bytes` zeros, compressed as it is written."""
    header = bytearray(512)
    name = b"bomb.bin"
    header[:len(name)] = name
    header[100:108] = b"0000644\0"
    header[108:116] = b"0000000\0"
    header[116:124] = b"0000000\0"
    header[124:136] = f"{member_bytes:011o}\0".encode()
    header[136:148] = b"00000000000\0"
    header[156:157] = b"0"
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"        "
    header[148:156] = f"{sum(header):06o}\0 ".encode()
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    with path.open("wb") as out:
        out.write(compressor.compress(bytes(header)))
        left = member_bytes + (-member_bytes % 512) + 1024
        while left:
            step = min(left, len(zeros))
            out.write(compressor.compress(zeros[:step]))
            left -= step
        out.write(compressor.flush())
    return path.stat().st_size


class Hub:
    def __init__(self, gateway: str, data: Path):
        keys = subprocess.run([gateway, "hub", "keys", "create", "--project", "bench", "--data", str(data)],
                              capture_output=True, text=True, check=True)
        answer = json.loads(keys.stdout)
        self.public, self.secret = answer["publicKey"], answer["secretKey"]
        self.process = subprocess.Popen([gateway, "hub", "serve", "--addr", "127.0.0.1:0", "--data", str(data)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.host = ""
        for line in self.process.stderr:
            if line.startswith("gateway hub listening on "):
                self.host = line.split("listening on ", 1)[1].strip()
                break
        if not self.host:
            raise SystemExit("the hub did not start")

    def env(self) -> dict:
        return {"GATEWAY_HOST": self.host, "GATEWAY_PUBLIC_KEY": self.public, "GATEWAY_SECRET_KEY": self.secret}

    def post(self, path: str, body: dict) -> dict:
        auth = base64.b64encode(f"{self.public}:{self.secret}".encode()).decode()
        request = urllib.request.Request(f"{self.host}/api/public/benchmark-containers{path}", data=json.dumps(body).encode(),
                                         headers={"Authorization": f"Basic {auth}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.loads(answer.read())

    def upload(self, slug: str, tarball: Path) -> None:
        """The API calls `bench push` makes, with a tarball of our own making."""
        data = tarball.read_bytes()
        sha = base64.b64encode(hashlib.sha256(data).digest()).decode()
        container = self.post("/resolve", {"slug": slug})["containerId"]
        version = self.post("/versions", {"containerId": container, "contentHash": hashlib.sha256(data).hexdigest(),
                                          "bundleSha256": sha, "bundleSizeBytes": len(data), "fileManifest": [],
                                          "branch": "main"})
        put = urllib.request.Request(version["uploadUrl"], data=data, method="PUT", headers={"x-amz-checksum-sha256": sha})
        urllib.request.urlopen(put, timeout=300).read()
        self.post(f"/versions/{version['versionId']}/finalize", {"branch": "main"})

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


# ------------------------------------------------------------------ main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--only", nargs="*", default=["compile", "import", "pull"])
    parser.add_argument("--world-mb", type=float, default=40)
    parser.add_argument("--data-mb", type=float, default=50)
    parser.add_argument("--rows", type=int, default=4900)
    parser.add_argument("--bomb-mb", type=float, default=1800)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    gateway = str(Path(args.gateway).resolve())
    if not Path("/usr/bin/time").exists():
        raise SystemExit("/usr/bin/time is needed (apt-get install time)")
    work = args.work or Path(tempfile.mkdtemp(prefix="big-worlds-"))
    work.mkdir(parents=True, exist_ok=True)
    print("| what | input | wall | max RSS | exit | left on disk |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    try:
        if "compile" in args.only:
            world = work / "big-schema"
            size = big_schema_world(world, args.world_mb, gateway)
            report("compile (world.json)", size, measured([gateway, "worlds", "schema", "compile", str(world)]))
        if "import" in args.only:
            world = work / "big-data"
            size, customers, tickets = big_data_world(world, args.data_mb)
            prepared = subprocess.run([gateway, "worlds", "schema", "compile", str(world)], capture_output=True, text=True)
            if prepared.returncode != 0:
                raise SystemExit(f"compiling the import world failed: {prepared.stdout[-300:]}{prepared.stderr[-300:]}")
            rows = work / "rows.jsonl"
            import_rows(rows, args.rows, customers, tickets + 10)
            result = measured([gateway, "worlds", "data", "import", str(world), str(rows)])
            report(f"import {args.rows:,} rows (data/initial.json)", size, result)
        if "pull" in args.only:
            bomb = work / "bomb.tar.gz"
            size = gzip_bomb(bomb, int(args.bomb_mb * MB))
            hub = Hub(gateway, work / "hub")
            try:
                hub.upload("bomb", bomb)
                target = work / "pulled"
                result = measured([gateway, "bench", "pull", "bomb", "-t", str(target)], env=hub.env(), cwd=work)
                report(f"pull of a gzip bomb ({args.bomb_mb:.0f} MB unpacked)", size, result, disk_bytes(target))
            finally:
                hub.stop()
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
