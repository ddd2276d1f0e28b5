//! The batch engine behind `data check` and `data import --dry-run`: every row of a
//! rows stream checked against a world's contract in a scratch copy of its snapshot.
//!
//! 1. **Stage**: each row's shape (unknown entity, not an object, missing key
//!    field, the entity's schema) is checked as it streams in; accepted rows are
//!    merged by store key (`upsert`: last wins, `fill`: first wins and later rows
//!    only add properties).
//! 2. **References**: every held row's relationships must point at a key the batch
//!    or the parent snapshot holds (the snapshot's keys do not count for an entity
//!    a `replace` names).
//! 3. **Apply**: the remaining rows as one batch (dependency order, planned against
//!    the scratch store exactly as a live seed is), so unique conflicts and the
//!    commit-time audit speak with the store's own refusals.
//!
//! Refusals are the original's records `{chunk, index, entity, primaryKey, field,
//! pointer, detail}`. Row positions follow the original's chunking: rows are cut into
//! chunks of at most 64 MiB of compact JSONL, `index` counts rows inside a chunk.

mod dry_run;
mod engine;
mod held;
mod line;
mod memory;
mod options;
mod references;
mod report;
mod shape;
mod sql;
mod staged;
mod types;

pub use crate::plan::Mode;
pub use dry_run::check_rows;
pub(crate) use engine::{Engine, Input};
pub use line::{encode_line, encoded_len, has_non_finite};
pub use options::{CheckOptions, Merge, CHUNK_BYTES, MEMORY_BUDGET, MERGES, PRINT_CAP, REPORT_CAP, ROW_LINE};
pub use report::{field_of, refusal, CheckReport};
pub use shape::{row_key, shape_refusal};
pub(crate) use sql::Ledger;
pub use staged::dependency_order;
