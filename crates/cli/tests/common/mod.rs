//! Helpers the CLI's hub tests share: the reference install (its `gateway` and `python`,
//! or a NOTICE and None), `gateway hub serve` on loopback with a fresh project key, and
//! running a `gateway` (ours or the original) against it with the key in its
//! environment. Not a test of its own.

#![allow(dead_code, unused_imports)] // each test file uses its own part

mod hub;

// Not every test that shares these helpers drives the original.
#[allow(unused_imports)]
pub use gateway_test_support::reference;
pub use hub::*;
