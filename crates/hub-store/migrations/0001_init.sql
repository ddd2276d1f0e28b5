-- The hub's metadata schema, in SQLite's dialect; PostgreSQL runs the text src/migrations.rs
-- derives from it (TEXT stays TEXT, compared and ordered with COLLATE "C" in queries as SQLite's
-- binary collation does; INTEGER becomes BIGINT, as SQLite integers are 64-bit; BLOB becomes BYTEA).
CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE api_keys (
    public_key TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(id),
    created_at TEXT NOT NULL
);
CREATE TABLE containers (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    tags TEXT NOT NULL,
    visibility TEXT NOT NULL,
    forked_from_version_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (project_id, slug)
);
CREATE TABLE versions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    container_id TEXT NOT NULL REFERENCES containers(id),
    content_hash TEXT NOT NULL,
    bundle_sha256 TEXT NOT NULL,
    bundle_size INTEGER NOT NULL,
    semantic_version TEXT,
    pyproject_meta TEXT NOT NULL,
    file_manifest TEXT NOT NULL,
    state TEXT NOT NULL,
    change_reason TEXT,
    author TEXT,
    image_ref TEXT,
    object_key TEXT NOT NULL,
    uploaded INTEGER NOT NULL,
    wheel_filename TEXT,
    wheel_sha256 TEXT,
    wheel_size INTEGER,
    wheel_uploaded INTEGER NOT NULL,
    requires_dist TEXT NOT NULL,
    forked_from_version_id TEXT,
    pushed_branch TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (container_id, content_hash)
);
CREATE INDEX versions_semver ON versions (container_id, semantic_version);
CREATE TABLE refs (
    container_id TEXT NOT NULL REFERENCES containers(id),
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    version_id TEXT NOT NULL REFERENCES versions(id),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (container_id, name)
);
CREATE TABLE proposals (
    id TEXT PRIMARY KEY,
    container_id TEXT NOT NULL REFERENCES containers(id),
    title TEXT NOT NULL,
    change_reason TEXT NOT NULL,
    base_version_id TEXT NOT NULL,
    target_branch TEXT NOT NULL,
    source_branch TEXT,
    changes TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE secrets (
    container_id TEXT NOT NULL REFERENCES containers(id),
    key TEXT NOT NULL,
    sealed BLOB NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (container_id, key)
);
CREATE TABLE run_configs (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
