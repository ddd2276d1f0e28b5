//! What the `worlds run` / `worlds ci` tests share: the helpdesk example with two
//! task specs, the binary run with a clean environment, and a server on loopback.
#![allow(dead_code, unused_imports)] // each test file uses its own part

mod binary;
mod helpdesk;
mod serve;

pub use binary::*;
pub use gateway_test_support::copy_tree as copy;
pub use helpdesk::*;
pub use serve::*;
