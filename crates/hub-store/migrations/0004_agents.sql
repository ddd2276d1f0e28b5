-- The agents platform (spec §8, §11): project secrets (sealed, never served), registered
-- agents, datasets and their items, runs (queued platform runs, verify jobs, SDK runs)
-- with the lease a worker holds, their metric points and rollouts, agent builds; and an
-- index that finds the evaluations filed for a build (the release gate reads them).
CREATE TABLE project_secrets (
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    scope TEXT NOT NULL,
    description TEXT,
    sealed BLOB NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, name)
);
CREATE TABLE agents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    image TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (project_id, name)
);
CREATE TABLE datasets (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    description TEXT,
    item_count INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (project_id, name)
);
CREATE TABLE dataset_items (
    dataset_id TEXT NOT NULL REFERENCES datasets(id),
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    PRIMARY KEY (dataset_id, idx)
);
CREATE TABLE runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    run_number INTEGER,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    name TEXT,
    state TEXT NOT NULL,
    algorithm_name TEXT,
    agent_id TEXT,
    dataset_id TEXT,
    config TEXT NOT NULL,
    job_id TEXT NOT NULL UNIQUE,
    worker_id TEXT,
    lease_expires INTEGER,
    attempts INTEGER NOT NULL,
    algo_state TEXT,
    result TEXT,
    metrics TEXT NOT NULL,
    metric_points INTEGER NOT NULL,
    rollouts INTEGER NOT NULL,
    details TEXT NOT NULL,
    created_at TEXT NOT NULL,
    started_at TEXT,
    heartbeat_at TEXT,
    finished_at TEXT,
    UNIQUE (project_id, run_number)
);
CREATE INDEX runs_by_project ON runs (project_id, kind, seq);
CREATE INDEX runs_claimable ON runs (project_id, source, state, seq);
CREATE TABLE run_metrics (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX run_metrics_by_run ON run_metrics (run_id, seq);
CREATE TABLE run_rollouts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    name TEXT,
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX run_rollouts_by_run ON run_rollouts (run_id, seq);
CREATE TABLE agent_builds (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    agent_id TEXT NOT NULL,
    build_hash TEXT NOT NULL,
    version TEXT,
    commit_sha TEXT,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (project_id, agent_id, build_hash)
);
CREATE INDEX agent_builds_by_commit ON agent_builds (project_id, commit_sha);
CREATE INDEX agent_builds_by_version ON agent_builds (project_id, agent_id, version);
CREATE INDEX agent_builds_by_hash ON agent_builds (project_id, build_hash);
-- An evaluation names its build in details.agentBuildId (the SDK's agent_build_id): the
-- gate finds a build's evaluations through this expression index, the same expression
-- in its query.
CREATE INDEX evaluations_by_build ON evaluations (project_id, json_extract(details, '$.agentBuildId'), seq);
-- postgres: CREATE INDEX evaluations_by_build ON evaluations (project_id, ((details::jsonb) ->> 'agentBuildId'), seq);
