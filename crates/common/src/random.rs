//! The workspace's one random source: the operating system's generator (getrandom(2)).

/// Bytes drawn from the operating system per system call for small requests.
const POOL: usize = 512;

/// A thread's unused bytes from the operating system: `bytes[used..]` are still fresh.
struct Pool {
    bytes: [u8; POOL],
    used: usize,
}

thread_local! {
    static POOLS: std::cell::RefCell<Pool> = const { std::cell::RefCell::new(Pool { bytes: [0; POOL], used: POOL }) };
}

/// Fill `buf` with random bytes from the operating system.
///
/// Small requests (a uuid, a batch id: two per created row) are served from a
/// per-thread pool the generator fills 512 bytes at a time: a system call each
/// cost about a microsecond and a half, 3 % of a create's time. Every byte still
/// comes from the operating system's generator and is handed out once; the pool
/// lives in this process only (its children are new programs, never forks of it).
pub fn fill_random(buf: &mut [u8]) {
    if buf.len() > POOL / 4 {
        return os_fill(buf);
    }
    POOLS.with(|pool| {
        let mut pool = pool.borrow_mut();
        if POOL - pool.used < buf.len() {
            os_fill(&mut pool.bytes);
            pool.used = 0;
        }
        let start = pool.used;
        buf.copy_from_slice(&pool.bytes[start..start + buf.len()]);
        // Handed out once: the bytes given are overwritten in the pool.
        pool.bytes[start..start + buf.len()].fill(0);
        pool.used += buf.len();
    });
}

fn os_fill(buf: &mut [u8]) {
    // No file to open per call, and no weaker fallback (clock, pid): without the
    // operating system's generator there is nothing safe to hand out.
    if let Err(error) = getrandom::fill(buf) {
        panic!("the operating system's random source failed: {error}");
    }
}

/// `n` random bytes.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    fill_random(&mut buf);
    buf
}

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    hex::encode(random_bytes(n))
}

#[cfg(test)]
mod tests {
    #[test]
    fn small_draws_from_the_pool_never_repeat_and_large_ones_bypass_it() {
        let mut seen = std::collections::HashSet::new();
        // Many pools' worth of 16-byte draws, across refills: all distinct and never zero.
        for _ in 0..2000 {
            let mut id = [0u8; 16];
            super::fill_random(&mut id);
            assert_ne!(id, [0u8; 16]);
            assert!(seen.insert(id), "a draw repeated");
        }
        let mut large = vec![0u8; 4096];
        super::fill_random(&mut large);
        assert!(large.iter().filter(|b| **b == 0).count() < 100, "a large draw is filled");
    }

    #[test]
    fn random_hex_has_twice_the_length_and_differs() {
        let (a, b) = (super::random_hex(16), super::random_hex(16));
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
