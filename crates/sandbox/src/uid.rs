//! A uid of its own for each confined process tree, when the starter is root. The
//! kernel counts `RLIMIT_NPROC` per uid, so a fork bomb is stopped at its tree's cap
//! without touching any other tree's count; files the tree creates carry its uid; and
//! nothing the hub owns (root's, mode 0600/0700) is readable or writable to it even
//! where a path were visible. The uids need no entry in /etc/passwd.
//!
//! Range: `BASE + (pid mod 4096) · 65536 + n mod 65536` — each process on the machine
//! (by pid, modulo 4096) draws from a block of its own, so two hubs on one machine do
//! not hand out the same uid unless their pids agree modulo 4096.

use std::sync::atomic::{AtomicU32, Ordering};

/// The first uid handed out: far above any distribution's user and subordinate ranges
/// (those start at 100000 and grow by 65536 per user).
pub const BASE: u32 = 1_000_000_000;

/// How many uids a process draws from before it starts over.
pub const BLOCK: u32 = 65536;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The next uid for a confined tree.
pub fn next() -> u32 {
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % BLOCK;
    BASE + (std::process::id() % 4096) * BLOCK + n
}

#[cfg(test)]
mod tests {
    #[test]
    fn uids_are_distinct_within_a_block_and_unprivileged() {
        let a = super::next();
        let b = super::next();
        assert_ne!(a, b);
        assert!(a >= super::BASE && b >= super::BASE);
        assert_eq!(a / super::BLOCK, b / super::BLOCK, "one process draws from one block");
    }
}
