//! The workspace's one random source: the operating system's generator (getrandom(2)).

/// Fill `buf` with random bytes from the operating system.
pub fn fill_random(buf: &mut [u8]) {
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
    fn random_hex_has_twice_the_length_and_differs() {
        let (a, b) = (super::random_hex(16), super::random_hex(16));
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
