-- Workspace connectors (spec §3): repos of template files owned by a project, and their
-- commits (the whole file set each, as a JSON object path → text). `head_commit_id` moves
-- only by a compare-and-set inside one transaction; a label names the newest commit pushed with it.
CREATE TABLE connector_repos (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    tags TEXT NOT NULL,
    readme TEXT,
    is_public INTEGER NOT NULL,
    scope TEXT NOT NULL,
    head_commit_id TEXT,
    cloned_from TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (project_id, slug)
);
CREATE INDEX connector_repos_public ON connector_repos (is_public, slug);
CREATE TABLE connector_commits (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    repo_id TEXT NOT NULL REFERENCES connector_repos(id) ON DELETE CASCADE,
    commit_hash TEXT NOT NULL,
    parent_hash TEXT,
    message TEXT NOT NULL,
    source TEXT NOT NULL,
    labels TEXT NOT NULL,
    files TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (repo_id, commit_hash)
);
CREATE TABLE connector_labels (
    repo_id TEXT NOT NULL REFERENCES connector_repos(id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    commit_id TEXT NOT NULL REFERENCES connector_commits(id) ON DELETE CASCADE,
    PRIMARY KEY (repo_id, label)
);
