//! JSON values as the original engine sees them, and the exact text it writes.
//!
//! The original is Python: its `json` module keeps integers and floats apart
//! (`1` vs `1.0`), accepts `NaN`/`Infinity` tokens, keeps lone surrogates and
//! keeps object members in document order. Hashes and generated files depend on
//! those details, so this module has its own small parser and writers instead of
//! serde_json (which collapses duplicates, rejects lone surrogates and formats
//! floats differently).

mod parse;
mod value;
mod write;
mod yaml;
pub use parse::*;
pub use value::*;
pub use write::*;
pub use yaml::{parse_yaml, KeyStyle, YamlError};

#[cfg(test)]
mod tests;
