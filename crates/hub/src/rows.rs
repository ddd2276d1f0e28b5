//! The row mapping both metadata backends share: for every stored type, its column list
//! and how a result row of those columns becomes the value, written once and read the
//! same way from a SQLite row (rusqlite) and a PostgreSQL row (sqlx).
//!
//! Why not sqlx's `FromRow` on both: the SQLite backend is rusqlite (bundled, synchronous,
//! `BEGIN IMMEDIATE` as the cross-process lock), which sqlx's derive does not serve. The
//! two schemas keep every column in the same order with the same type, flags as integers
//! (0/1), so one reading fits both. This module holds no SQL beyond column lists.

use crate::agents::{Agent, AgentBuild, Dataset, ProjectSecret, Run};
use crate::connectors::{ConnectorCommit, ConnectorRepo, HubRow};
use crate::evaluations::{Evaluation, Sample, SampleSums, TaskVersionSums};
use crate::store::{Container, Proposal, Ref, SecretInfo, Version};
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

plain_columns!(String, Option<String>, i64, Option<i64>, f64, Option<f64>, Vec<u8>);

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

/// A value read from consecutive columns of a result row: one column for a [`Column`],
/// a run of them for a struct (its fields in order; a nested struct reads its own run).
pub(crate) trait FromColumns: Sized {
    /// The value whose first column is `*next`; `*next` moves past its last.
    fn read_next<R: ResultRow>(row: &R, next: &mut usize) -> Result<Self, R::Error>;

    /// The value from `row`, its columns starting at `at` (a join reads two types from one row).
    fn read_at<R: ResultRow>(row: &R, at: usize) -> Result<Self, R::Error> {
        Self::read_next(row, &mut { at })
    }
}

impl<T: Column> FromColumns for T {
    fn read_next<R: ResultRow>(row: &R, next: &mut usize) -> Result<Self, R::Error> {
        *next += 1;
        row.column(*next - 1)
    }
}

/// Two values side by side: the first's columns, then the second's.
impl<A: FromColumns, B: FromColumns> FromColumns for (A, B) {
    fn read_next<R: ResultRow>(row: &R, next: &mut usize) -> Result<Self, R::Error> {
        Ok((A::read_next(row, next)?, B::read_next(row, next)?))
    }
}

/// A type stored as one table row: the columns a `SELECT` names for it, in field order.
pub(crate) trait Stored: FromColumns {
    const COLUMNS: &'static str;
}

/// A value from a SQLite row whose first columns are its own (for `query_row`/`query_map`).
pub(crate) fn from_sqlite<T: FromColumns>(row: &rusqlite::Row<'_>) -> rusqlite::Result<T> {
    T::read_at(row, 0)
}

/// A value from a PostgreSQL row whose first columns are its own.
pub(crate) fn from_postgres<T: FromColumns>(row: &PgRow) -> Result<T, sqlx::Error> {
    T::read_at(row, 0)
}

/// [`FromColumns`] for a struct whose listed fields are read in order; fields after
/// `default` are not read and start as their `Default`.
macro_rules! from_columns {
    ($ty:ty { $($field:ident),* $(; default $($skipped:ident),*)? }) => {
        impl FromColumns for $ty {
            fn read_next<R: ResultRow>(row: &R, next: &mut usize) -> Result<Self, R::Error> {
                Ok(Self {
                    $($field: FromColumns::read_next(row, next)?,)*
                    $($($skipped: Default::default(),)*)?
                })
            }
        }
    };
}

/// [`FromColumns`] and [`Stored`] for a struct whose listed fields are its columns, by name
/// and in order (optionally qualified by a table alias, `"r."`).
macro_rules! stored {
    ($ty:ty { $($rest:tt)* }) => { stored!("" $ty { $($rest)* }); };
    ($alias:literal $ty:ty { $first:ident $(, $field:ident)* $(; default $($skipped:ident),*)? $(,)? }) => {
        from_columns!($ty { $first $(, $field)* $(; default $($skipped),*)? });
        impl Stored for $ty {
            const COLUMNS: &'static str = concat!($alias, stringify!($first) $(, ", ", $alias, stringify!($field))*);
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
stored!(SecretInfo { key, created_at, updated_at });
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

// The sums a query computes (their SQL is each backend's own), in field order.
from_columns!(SampleSums { samples, null_rewards, reward_sum, reward_squares, scores, score_sum, judged, passed });
from_columns!(TaskVersionSums { task, version_id, sums });

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

/// A hub listing row: [`ConnectorRepo::COLUMNS`], the owning project's name, then the
/// head's [`ConnectorCommit::COLUMNS`], last (all NULL, and left unread, where the repo
/// has no head yet).
impl FromColumns for HubRow {
    fn read_next<R: ResultRow>(row: &R, next: &mut usize) -> Result<Self, R::Error> {
        let repo = ConnectorRepo::read_next(row, next)?;
        let org_name = String::read_next(row, next)?;
        let head_id: Option<String> = row.column(*next)?;
        let head = match head_id {
            Some(_) => Some(ConnectorCommit::read_next(row, next)?),
            None => None,
        };
        Ok(HubRow { repo, org_name, head })
    }
}

/// The column that follows [`ConnectorCommit::COLUMNS`] where a query wants the files.
pub(crate) const COMMIT_FILES: &str = "c.files";

/// A commit with its files: [`ConnectorCommit::COLUMNS`], then [`COMMIT_FILES`].
pub(crate) fn read_commit_with_files<R: ResultRow>(row: &R) -> Result<ConnectorCommit, R::Error> {
    let mut next = 0;
    let mut commit = ConnectorCommit::read_next(row, &mut next)?;
    commit.files = row.column(next)?;
    Ok(commit)
}

// The column lists by name, for `format!` strings in the backends' SQL.
pub(crate) const CONTAINER_COLUMNS: &str = Container::COLUMNS;
pub(crate) const VERSION_COLUMNS: &str = Version::COLUMNS;
pub(crate) const REF_COLUMNS: &str = Ref::COLUMNS;
pub(crate) const PROPOSAL_COLUMNS: &str = Proposal::COLUMNS;
pub(crate) const SECRET_INFO_COLUMNS: &str = SecretInfo::COLUMNS;
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
