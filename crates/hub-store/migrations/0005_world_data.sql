-- World data batches (spec §4, §9.6): rows imported into a hub world in chunks. A batch
-- and its registered chunks (their bytes live in the object store, addressed by digest);
-- a world's data head (the snapshot its applied batches left, on top of a version, and
-- whether batches wait for `data publish`); and the lock one applier holds on a world
-- at a time (a lease, so a process that dies lets the next take over).
CREATE TABLE world_data_batches (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    container_id TEXT NOT NULL REFERENCES containers(id),
    state TEXT NOT NULL,
    phase TEXT,
    mode TEXT NOT NULL,
    merge TEXT NOT NULL,
    atomic INTEGER NOT NULL,
    publish TEXT NOT NULL,
    dry_run INTEGER NOT NULL,
    message TEXT,
    base_version_id TEXT,
    result TEXT,
    refusals TEXT,
    report_key TEXT,
    version_id TEXT,
    error TEXT,
    lease_until INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX world_data_batches_by_container ON world_data_batches (container_id, seq);
CREATE TABLE world_data_chunks (
    batch_id TEXT NOT NULL REFERENCES world_data_batches(id),
    ordinal INTEGER NOT NULL,
    id TEXT NOT NULL UNIQUE,
    digest TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    rows INTEGER NOT NULL,
    entity TEXT,
    uploaded INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (batch_id, ordinal)
);
CREATE TABLE world_data_heads (
    container_id TEXT PRIMARY KEY REFERENCES containers(id),
    base_version_id TEXT NOT NULL,
    snapshot_key TEXT NOT NULL,
    batch_digest TEXT NOT NULL,
    contract_hash TEXT NOT NULL,
    entity_counts TEXT NOT NULL,
    file_sha256 TEXT NOT NULL,
    pending INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE world_data_locks (
    container_id TEXT PRIMARY KEY REFERENCES containers(id),
    holder TEXT NOT NULL,
    lease_until INTEGER NOT NULL
);
