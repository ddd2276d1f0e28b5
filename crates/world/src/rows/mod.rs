//! Rows files: the three shapes `data import`, `data check` and live seeding read,
//! streamed row by row in bounded memory.
//!
//! * a JSON object `{"<entity>": [row, …], …}` (a *document*),
//! * tagged JSONL, one `{"entity": "<name>", "row": {…}}` per line,
//! * bare rows (only with `--entity`): a JSON array of rows, or JSONL of row objects.
//!
//! `-` reads stdin and `*.gz` files are gunzipped. Shape detection, the refusals and
//! their wording follow the original's `batch.iter_rows`: the first non-space
//! character picks array vs object, and for an object the first line (≤ 1 MiB)
//! decides between JSONL and a document. Rows are parsed as Python's `json.loads`
//! parses them (integers vs floats, member order, a repeated member silently last).

mod document;
mod jsonl;
mod read;
mod reader;
mod row;
mod source;

pub(crate) use document::stream_array;
pub use jsonl::PrepareText;
pub use read::{count_rows, read_rows, read_rows_prepared, LINE_CAP, READ_BLOCK};
pub(crate) use reader::Reader;
pub use row::{bytes_repr, plain, Flow, Progress, Row, Seen, Sink};
// What reader.rs and source.rs take from here.
use row::{decode, rows_error, Decoded};
pub use source::open_source;

#[cfg(test)]
mod tests;
