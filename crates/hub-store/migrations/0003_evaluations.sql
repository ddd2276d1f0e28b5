-- Evaluations (spec §2): one run of a model against a pinned READY version, and its
-- scored samples.
-- Samples carry their evaluation's container and version, so per-task performance
-- reads one index; `task` is the grouping key (task, else exampleId, else '').
CREATE TABLE evaluations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    container_id TEXT NOT NULL REFERENCES containers(id),
    version_id TEXT NOT NULL REFERENCES versions(id),
    model TEXT,
    run_id TEXT,
    status TEXT NOT NULL,
    num_examples INTEGER,
    rollouts_per_example INTEGER,
    details TEXT NOT NULL,
    metrics TEXT,
    cost TEXT,
    sample_count INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX evaluations_by_container ON evaluations (container_id, seq);
CREATE TABLE evaluation_samples (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    evaluation_id TEXT NOT NULL REFERENCES evaluations(id),
    container_id TEXT NOT NULL REFERENCES containers(id),
    version_id TEXT NOT NULL REFERENCES versions(id),
    task TEXT NOT NULL,
    example_id TEXT,
    rollout_index INTEGER NOT NULL,
    reward REAL,
    score REAL,
    correct INTEGER,
    passed INTEGER,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX evaluation_samples_by_evaluation ON evaluation_samples (evaluation_id, seq);
CREATE INDEX evaluation_samples_by_task ON evaluation_samples (container_id, task, version_id);
-- postgres: CREATE INDEX evaluation_samples_by_task ON evaluation_samples (container_id, task COLLATE "C", version_id);
