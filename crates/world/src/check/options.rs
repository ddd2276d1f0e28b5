//! What a check is asked to do: the merge rule, the chunking and the budgets
//! ([`CheckOptions`]), and the caps on refusal records.

use crate::error::ContractError;
use crate::json::DumpOptions;
use crate::plan::Mode;

/// JSONL bytes per chunk before a new one starts.
pub const CHUNK_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of held rows kept in memory before they move to disk.
pub const MEMORY_BUDGET: usize = 32 * 1024 * 1024;
/// Refusal records kept (and written to a report).
pub const REPORT_CAP: usize = 10_000;
/// Refusal records printed by the CLI.
pub const PRINT_CAP: usize = 200;
/// Merge rules for rows repeating a key inside one batch.
pub const MERGES: [&str; 2] = ["upsert", "fill"];

/// What a row repeating a key already held in the batch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Merge {
    /// The last row wins.
    #[default]
    Upsert,
    /// The first row wins; later ones only add the fields it lacks.
    Fill,
}

impl Merge {
    /// Every rule, in the original's order.
    pub const ALL: [Merge; 2] = [Merge::Upsert, Merge::Fill];

    /// The original's spelling (`upsert`, `fill`).
    pub fn as_str(self) -> &'static str {
        match self {
            Merge::Upsert => "upsert",
            Merge::Fill => "fill",
        }
    }
}

impl std::fmt::Display for Merge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Merge {
    type Err = ContractError;

    /// A stored or sent spelling; anything else is the engine's refusal.
    fn from_str(text: &str) -> std::result::Result<Merge, ContractError> {
        Merge::ALL
            .into_iter()
            .find(|merge| merge.as_str() == text)
            .ok_or_else(|| ContractError::new("merge", "merge must be upsert or fill", "/merge"))
    }
}

/// `json.dumps(x, ensure_ascii=False, separators=(",", ":"))`: one JSONL line.
pub const ROW_LINE: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true };

/// What a check was asked to do.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The entity bare-row files hold.
    pub entity: Option<String>,
    /// How the rows meet the world's.
    pub mode: Mode,
    /// What a row repeating a key in the batch does.
    pub merge: Merge,
    /// JSONL bytes per chunk.
    pub chunk_bytes: usize,
    /// Bytes of accepted rows held in memory; past it they move to a scratch file.
    pub memory_budget: usize,
    /// Threads that parse and shape-check JSONL rows (at most the machine's cores; past
    /// about four the staging thread is the bottleneck). Default 4.
    pub threads: usize,
    /// Always apply in a scratch SQLite copy, even where the in-memory apply decides
    /// (the two must agree; tests compare them).
    pub exact: bool,
    /// Read plain JSONL rows from their text without building them
    /// (`Validator::scan`); off, every row is parsed (the two must agree; tests
    /// compare them).
    pub scan: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            entity: None,
            mode: Mode::Append,
            merge: Merge::Upsert,
            chunk_bytes: CHUNK_BYTES,
            memory_budget: MEMORY_BUDGET,
            threads: 4,
            exact: false,
            scan: true,
        }
    }
}
