//! A resolved entity schema compiled once into a validator that answers "does this
//! value conform?" without building any location or message.
//!
//! It accepts exactly what [`crate::dialect::validate`] accepts (same keywords, same
//! number and format rules); only a value it refuses goes through `validate` again
//! for the original's first error. Rows files are mostly valid, so the hot path
//! never formats a string.

mod compiled;
mod scan;

pub use compiled::Validator;
pub use scan::Scanned;
