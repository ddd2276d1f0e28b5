-- Platform records kept as JSON documents: stored world tasks, world sessions and
-- their call logs, registered World Hosts. `seq` orders a kind's documents in the
-- order they were first written (call logs page by it).
CREATE TABLE documents (
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, kind, id)
);
CREATE UNIQUE INDEX documents_order ON documents (project_id, kind, seq);
