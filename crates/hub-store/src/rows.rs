//! The row mapping both metadata backends share: for every stored type, its column list,
//! how a result row of those columns becomes the value and what an INSERT of the value
//! binds, written once and read (and bound) the same way on a SQLite connection
//! (rusqlite) and a PostgreSQL one (sqlx).
//!
//! Why not sqlx's `FromRow` on both: the SQLite backend is rusqlite (bundled, synchronous,
//! `BEGIN IMMEDIATE` as the cross-process lock), which sqlx's derive does not serve. The
//! two schemas keep every column in the same order with the same type, flags as integers
//! (0/1), so one reading fits both. This module holds no SQL beyond column lists, the
//! plain `INSERT` they make and the upserts both dialects write alike.

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

/// One value bound to a statement the same way on both backends: text, an integer (a
/// flag as 0/1) or a float, each possibly NULL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Param<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Real(Option<f64>),
}

/// A field written as one [`Param`].
pub(crate) trait ToParam {
    fn param(&self) -> Param<'_>;
}

macro_rules! to_param {
    ($($t:ty => |$value:ident| $param:expr),* $(,)?) => {$(
        impl ToParam for $t {
            fn param(&self) -> Param<'_> {
                let $value = self;
                $param
            }
        }
    )*};
}

to_param!(
    String => |text| Param::Text(Some(text)),
    Option<String> => |text| Param::Text(text.as_deref()),
    i64 => |number| Param::Int(Some(*number)),
    Option<i64> => |number| Param::Int(*number),
    bool => |flag| Param::Int(Some(i64::from(*flag))),
    Option<bool> => |flag| Param::Int(flag.map(i64::from)),
    f64 => |number| Param::Real(Some(*number)),
    Option<f64> => |number| Param::Real(*number),
);

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Param::Text(text) => text.to_sql(),
            Param::Int(number) => number.to_sql(),
            Param::Real(number) => number.to_sql(),
        }
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

/// A type stored as one table row: the columns a `SELECT` names for it, in field order,
/// and what an `INSERT` of it writes.
pub(crate) trait Stored: FromColumns {
    const COLUMNS: &'static str;
    /// The columns an `INSERT` writes (all but the one the database numbers), unqualified.
    const INSERT_COLUMNS: &'static str;
    /// The values of [`Stored::INSERT_COLUMNS`], in order.
    fn params(&self) -> Vec<Param<'_>>;
}

/// `INSERT INTO <table> (<T's insert columns>) VALUES (…)` with a placeholder per column
/// (`mark` and its number: `?1`, `$1`), then `rest` (an `ON CONFLICT …` clause, or nothing).
pub(crate) fn insert_sql<T: Stored>(table: &str, mark: char, rest: &str) -> String {
    let count = T::INSERT_COLUMNS.split(", ").count();
    let values: Vec<String> = (1..=count).map(|at| format!("{mark}{at}")).collect();
    let sql = format!("INSERT INTO {table} ({}) VALUES ({})", T::INSERT_COLUMNS, values.join(", "));
    if rest.is_empty() {
        sql
    } else {
        format!("{sql} {rest}")
    }
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
/// and in order (optionally qualified by a table alias, `"r."`); the field after `numbered`
/// is the last column, which the database numbers (never inserted); fields after `default`
/// are not columns.
macro_rules! stored {
    ($ty:ty { $($rest:tt)* }) => { stored!("" $ty { $($rest)* }); };
    ($alias:literal $ty:ty {
        $first:ident $(, $field:ident)* $(; numbered $numbered:ident)? $(; default $($skipped:ident),*)? $(,)?
    }) => {
        from_columns!($ty { $first $(, $field)* $(, $numbered)? $(; default $($skipped),*)? });
        impl Stored for $ty {
            const COLUMNS: &'static str =
                concat!($alias, stringify!($first) $(, ", ", $alias, stringify!($field))* $(, ", ", $alias, stringify!($numbered))?);
            const INSERT_COLUMNS: &'static str = concat!(stringify!($first) $(, ", ", stringify!($field))*);
            fn params(&self) -> Vec<Param<'_>> {
                vec![self.$first.param() $(, self.$field.param())*]
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
    created_at; numbered seq
});
stored!(Ref { container_id, name, kind, version_id, created_at, updated_at });
stored!(SecretInfo { key, created_at, updated_at });
stored!(Proposal { id, container_id, title, change_reason, base_version_id, target_branch, source_branch, changes, status, created_at });

stored!(ProjectSecret { name, scope, description, created_at, updated_at });
stored!(Agent { id, project_id, name, image, body, created_at, updated_at; numbered seq });
stored!(Dataset { id, project_id, name, description, item_count, created_at, updated_at; numbered seq });
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
    finished_at; numbered seq
});
stored!(AgentBuild { id, project_id, agent_id, build_hash, version, commit_sha, body, created_at; numbered seq });

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
    completed_at; numbered seq
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
    completed_at; numbered seq
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

/// A chunk registered again at its ordinal replaces the one there (both dialects alike).
pub(crate) const CHUNK_UPSERT: &str = "ON CONFLICT (batch_id, ordinal) DO UPDATE SET id = excluded.id, digest = excluded.digest, \
     bytes = excluded.bytes, rows = excluded.rows, entity = excluded.entity, uploaded = excluded.uploaded, \
     created_at = excluded.created_at";
/// A world's data head is one row, replaced whole.
pub(crate) const HEAD_UPSERT: &str = "ON CONFLICT (container_id) DO UPDATE SET base_version_id = excluded.base_version_id, \
     snapshot_key = excluded.snapshot_key, batch_digest = excluded.batch_digest, contract_hash = excluded.contract_hash, \
     entity_counts = excluded.entity_counts, file_sha256 = excluded.file_sha256, pending = excluded.pending, \
     updated_at = excluded.updated_at";

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
    fn an_insert_binds_every_column_but_the_numbered_one_in_order() {
        assert_eq!(
            insert_sql::<Ref>("refs", '?', ""),
            "INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        );
        assert_eq!(Agent::INSERT_COLUMNS, "id, project_id, name, image, body, created_at, updated_at");
        assert!(Agent::COLUMNS.ends_with(", updated_at, seq"));
        assert_eq!(ConnectorRepo::INSERT_COLUMNS.split(", ").next(), Some("id"), "a table alias qualifies only the SELECT list");
        let sql = insert_sql::<DataHead>("world_data_heads", '$', HEAD_UPSERT);
        assert!(sql.contains("$8, $9) ON CONFLICT (container_id) DO UPDATE"), "{sql}");
        let run = Run::default();
        assert_eq!(run.params().len(), Run::INSERT_COLUMNS.split(", ").count());
    }

    #[test]
    fn a_row_inserted_with_its_params_reads_back_the_same() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE world_data_chunks (batch_id TEXT, ordinal INTEGER, id TEXT, digest TEXT, bytes INTEGER, rows INTEGER, \
             entity TEXT, uploaded INTEGER, created_at TEXT)",
        )
        .unwrap();
        let chunk = DataChunk {
            batch_id: "b".into(),
            ordinal: 2,
            id: "c".into(),
            digest: "d".into(),
            bytes: 10,
            rows: 3,
            entity: None,
            uploaded: true,
            created_at: "t".into(),
        };
        conn.execute(&insert_sql::<DataChunk>("world_data_chunks", '?', ""), rusqlite::params_from_iter(chunk.params())).unwrap();
        let flag: i64 = conn.query_row("SELECT uploaded FROM world_data_chunks", [], |row| row.get(0)).unwrap();
        assert_eq!(flag, 1, "a flag is stored as 0/1");
        let back: DataChunk = conn.query_row(&format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks"), [], from_sqlite).unwrap();
        assert_eq!(format!("{back:?}"), format!("{chunk:?}"));
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
