//! The row mapping both metadata backends share: for every stored type, its column list
//! and how a result row of those columns becomes the value, written once and read the
//! same way from a SQLite row (rusqlite) and a PostgreSQL row (sqlx).
//!
//! Why not sqlx's `FromRow` on both: the SQLite backend is rusqlite (bundled, synchronous,
//! `BEGIN IMMEDIATE` as the cross-process lock), which sqlx's derive does not serve. The
//! two schemas keep every column in the same order with the same type, flags as integers
//! (0/1), so one reading fits both. This module holds no SQL beyond column lists.

use crate::agents::{Agent, AgentBuild, Dataset, ProjectSecret, Run};
use crate::connectors::{ConnectorCommit, ConnectorRepo};
use crate::evaluations::{Evaluation, Sample};
use crate::store::{Container, Proposal, Ref, Version};
use crate::world_data::{DataBatch, DataChunk, DataHead};
use sqlx::postgres::PgRow;
use sqlx::Row as _;

/// One value read from a result column the same way on both backends.
pub(crate) trait Column: Sized {
    fn from_sqlite(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self>;
    fn from_postgres(row: &PgRow, at: usize) -> Result<Self, sqlx::Error>;
}

macro_rules! plain_columns {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
                row.get(at)
            }
            fn from_postgres(row: &PgRow, at: usize) -> Result<Self, sqlx::Error> {
                row.try_get(at)
            }
        }
    )*};
}

plain_columns!(String, Option<String>, i64, Option<i64>, f64, Option<f64>);

/// Flags are integer columns in both schemas (PostgreSQL's were made `BIGINT` to match).
impl Column for bool {
    fn from_sqlite(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(row.get::<_, i64>(at)? != 0)
    }
    fn from_postgres(row: &PgRow, at: usize) -> Result<Self, sqlx::Error> {
        Ok(row.try_get::<i64, _>(at)? != 0)
    }
}

impl Column for Option<bool> {
    fn from_sqlite(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(row.get::<_, Option<i64>>(at)?.map(|flag| flag != 0))
    }
    fn from_postgres(row: &PgRow, at: usize) -> Result<Self, sqlx::Error> {
        Ok(row.try_get::<Option<i64>, _>(at)?.map(|flag| flag != 0))
    }
}

/// A result row of either backend.
pub(crate) trait ResultRow {
    type Error;
    fn column<T: Column>(&self, at: usize) -> Result<T, Self::Error>;
}

impl ResultRow for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn column<T: Column>(&self, at: usize) -> rusqlite::Result<T> {
        T::from_sqlite(self, at)
    }
}

impl ResultRow for PgRow {
    type Error = sqlx::Error;
    fn column<T: Column>(&self, at: usize) -> Result<T, sqlx::Error> {
        T::from_postgres(self, at)
    }
}

/// A type stored as one table row: the columns a `SELECT` names for it, in field order.
pub(crate) trait Stored: Sized {
    const COLUMNS: &'static str;
    /// The value from `row`, its columns starting at `at` (a join reads two types from one row).
    fn read_at<R: ResultRow>(row: &R, at: usize) -> Result<Self, R::Error>;
}

/// A stored value from a SQLite row whose columns are [`Stored::COLUMNS`] (for `query_row`/`query_map`).
pub(crate) fn from_sqlite<T: Stored>(row: &rusqlite::Row<'_>) -> rusqlite::Result<T> {
    T::read_at(row, 0)
}

/// A stored value from a PostgreSQL row whose columns are [`Stored::COLUMNS`].
pub(crate) fn from_postgres<T: Stored>(row: &PgRow) -> Result<T, sqlx::Error> {
    T::read_at(row, 0)
}

/// `Stored` for a struct whose listed fields are its columns, by name and in order
/// (optionally qualified by a table alias, `"r."`); fields after `default` are not columns
/// and start as their `Default`.
macro_rules! stored {
    ($ty:ty { $($rest:tt)* }) => { stored!("" $ty { $($rest)* }); };
    ($alias:literal $ty:ty { $first:ident $(, $field:ident)* $(; default $($skipped:ident),*)? $(,)? }) => {
        impl Stored for $ty {
            const COLUMNS: &'static str = concat!($alias, stringify!($first) $(, ", ", $alias, stringify!($field))*);
            fn read_at<R: ResultRow>(row: &R, at: usize) -> Result<Self, R::Error> {
                let mut next = at;
                let mut column = || {
                    next += 1;
                    next - 1
                };
                Ok(Self {
                    $first: row.column(column())?,
                    $($field: row.column(column())?,)*
                    $($($skipped: Default::default(),)*)?
                })
            }
        }
    };
}

stored!(Container { id, project_id, slug, name, description, tags, visibility, forked_from_version_id, created_at });
stored!(Version {
    id,
    container_id,
    content_hash,
    bundle_sha256,
    bundle_size,
    semantic_version,
    pyproject_meta,
    file_manifest,
    state,
    change_reason,
    author,
    image_ref,
    object_key,
    uploaded,
    wheel_filename,
    wheel_sha256,
    wheel_size,
    wheel_uploaded,
    requires_dist,
    forked_from_version_id,
    pushed_branch,
    created_at,
    seq
});
stored!(Ref { container_id, name, kind, version_id, created_at, updated_at });
stored!(Proposal { id, container_id, title, change_reason, base_version_id, target_branch, source_branch, changes, status, created_at });

stored!(ProjectSecret { name, scope, description, created_at, updated_at });
stored!(Agent { id, project_id, name, image, body, created_at, updated_at, seq });
stored!(Dataset { id, project_id, name, description, item_count, created_at, updated_at, seq });
stored!(Run {
    id,
    project_id,
    run_number,
    kind,
    source,
    name,
    state,
    algorithm_name,
    agent_id,
    dataset_id,
    config,
    job_id,
    worker_id,
    lease_expires,
    attempts,
    algo_state,
    result,
    metrics,
    metric_points,
    rollouts,
    details,
    created_at,
    started_at,
    heartbeat_at,
    finished_at,
    seq
});
stored!(AgentBuild { id, project_id, agent_id, build_hash, version, commit_sha, body, created_at, seq });

stored!(Evaluation {
    id,
    project_id,
    container_id,
    version_id,
    model,
    run_id,
    status,
    num_examples,
    rollouts_per_example,
    details,
    metrics,
    cost,
    sample_count,
    created_at,
    completed_at,
    seq
});
stored!(Sample {
    id,
    evaluation_id,
    container_id,
    version_id,
    task,
    example_id,
    rollout_index,
    reward,
    score,
    correct,
    passed,
    body,
    created_at
});

stored!(DataBatch {
    id,
    project_id,
    container_id,
    state,
    phase,
    mode,
    merge,
    atomic,
    publish,
    dry_run,
    message,
    base_version_id,
    result,
    refusals,
    report_key,
    version_id,
    error,
    lease_until,
    created_at,
    updated_at,
    completed_at,
    seq
});
stored!(DataChunk { batch_id, ordinal, id, digest, bytes, rows, entity, uploaded, created_at });
stored!(DataHead {
    container_id,
    base_version_id,
    snapshot_key,
    batch_digest,
    contract_hash,
    entity_counts,
    file_sha256,
    pending,
    updated_at
});

// Connector queries join repos (`r`) and commits (`c`), so their columns are qualified.
stored!("r." ConnectorRepo {
    id, project_id, slug, name, description, tags, readme, is_public, scope, head_commit_id, cloned_from, created_at, updated_at
});
// A commit's `files` is read only where asked for (see [`COMMIT_FILES`]).
stored!("c." ConnectorCommit { id, repo_id, commit_hash, parent_hash, message, source, labels, metadata, created_at; default files });

/// The column that follows [`ConnectorCommit::COLUMNS`] where a query wants the files.
pub(crate) const COMMIT_FILES: &str = "c.files";

/// A commit from [`ConnectorCommit::COLUMNS`] starting at column `at`, then [`COMMIT_FILES`] if `with_files`.
pub(crate) fn read_commit<R: ResultRow>(row: &R, at: usize, with_files: bool) -> Result<ConnectorCommit, R::Error> {
    let mut commit = ConnectorCommit::read_at(row, at)?;
    if with_files {
        commit.files = row.column(at + 9)?;
    }
    Ok(commit)
}

// The column lists by name, for `format!` strings in the backends' SQL.
pub(crate) const CONTAINER_COLUMNS: &str = Container::COLUMNS;
pub(crate) const VERSION_COLUMNS: &str = Version::COLUMNS;
pub(crate) const REF_COLUMNS: &str = Ref::COLUMNS;
pub(crate) const PROPOSAL_COLUMNS: &str = Proposal::COLUMNS;
pub(crate) const SECRET_COLUMNS: &str = ProjectSecret::COLUMNS;
pub(crate) const AGENT_COLUMNS: &str = Agent::COLUMNS;
pub(crate) const DATASET_COLUMNS: &str = Dataset::COLUMNS;
pub(crate) const RUN_COLUMNS: &str = Run::COLUMNS;
pub(crate) const BUILD_COLUMNS: &str = AgentBuild::COLUMNS;
pub(crate) const EVALUATION_COLUMNS: &str = Evaluation::COLUMNS;
pub(crate) const SAMPLE_COLUMNS: &str = Sample::COLUMNS;
pub(crate) const BATCH_COLUMNS: &str = DataBatch::COLUMNS;
pub(crate) const CHUNK_COLUMNS: &str = DataChunk::COLUMNS;
pub(crate) const HEAD_COLUMNS: &str = DataHead::COLUMNS;
pub(crate) const REPO_COLUMNS: &str = ConnectorRepo::COLUMNS;
pub(crate) const COMMIT_COLUMNS: &str = ConnectorCommit::COLUMNS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_lists_follow_the_fields_in_order() {
        assert_eq!(Ref::COLUMNS, "container_id, name, kind, version_id, created_at, updated_at");
        assert_eq!(
            ConnectorCommit::COLUMNS,
            "c.id, c.repo_id, c.commit_hash, c.parent_hash, c.message, c.source, c.labels, c.metadata, c.created_at"
        );
    }

    #[test]
    fn a_sqlite_row_reads_by_position_from_an_offset() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let got: (String, Ref) = conn
            .query_row("SELECT 'skipped', 'c1', 'main', 'branch', 'v1', 't0', 't1'", [], |row| Ok((row.get(0)?, Ref::read_at(row, 1)?)))
            .unwrap();
        assert_eq!(got.0, "skipped");
        assert_eq!((got.1.container_id.as_str(), got.1.name.as_str(), got.1.updated_at.as_str()), ("c1", "main", "t1"));
        let flags: (bool, Option<bool>, Option<bool>) =
            conn.query_row("SELECT 2, NULL, 0", [], |row| Ok((row.column(0)?, row.column(1)?, row.column(2)?))).unwrap();
        assert_eq!(flags, (true, None, Some(false)));
    }
}
