//! The world's clock and ids: the process clock (or `GATEWAY_WORLD_CLOCK`) and random
//! UUIDs, or a session's frozen clock and seeded id sequence (`Determinism`), so the
//! same transcript gives the same state on any host.

use std::sync::Mutex;

/// A session's reproducibility: a frozen clock and ids drawn from a seeded
/// sequence, so the same transcript gives the same state on any host.
#[derive(Debug)]
pub struct Determinism {
    /// The frozen clock, epoch seconds (None: the process clock).
    clock: Mutex<Option<f64>>,
    seed: std::sync::atomic::AtomicU64,
    drawn: std::sync::atomic::AtomicU64,
}

impl Determinism {
    /// Ids seeded by `seed`; the clock frozen at `clock` when given.
    pub fn new(clock: Option<f64>, seed: u64) -> Determinism {
        Determinism { clock: Mutex::new(clock), seed: seed.into(), drawn: Default::default() }
    }

    /// Freeze the clock at `clock` (None: the process clock again).
    pub fn set_clock(&self, clock: Option<f64>) {
        *self.clock.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = clock;
    }

    /// The frozen clock, if any.
    pub fn clock(&self) -> Option<f64> {
        *self.clock.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Seed the id sequence again, from its start.
    pub fn reseed(&self, seed: u64) {
        self.seed.store(seed, std::sync::atomic::Ordering::SeqCst);
        self.restart();
    }

    /// A copy at the same place: the same clock, seed and position in the id
    /// sequence, so a forked session draws the ids its parent would draw next.
    pub fn fork(&self) -> Determinism {
        Determinism {
            clock: Mutex::new(self.clock()),
            seed: self.seed.load(std::sync::atomic::Ordering::SeqCst).into(),
            drawn: self.drawn.load(std::sync::atomic::Ordering::SeqCst).into(),
        }
    }

    /// Start the id sequence again (a reset goes back to the same ids).
    pub fn restart(&self) {
        self.drawn.store(0, std::sync::atomic::Ordering::SeqCst);
    }

    /// The next id of the sequence, shaped as a version-4 UUID.
    pub fn uuid(&self) -> String {
        let n = self.drawn.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let seed = self.seed.load(std::sync::atomic::Ordering::SeqCst);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&splitmix64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes());
        b[8..].copy_from_slice(&splitmix64(seed.rotate_left(32) ^ n).to_be_bytes());
        uuid_text(b)
    }
}

/// SplitMix64, the standard 64-bit mixer: written here because a seeded id
/// sequence needs nothing more, and no random-number crate is in the tree.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn uuid_text(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    // The 8-4-4-4-12 groups written straight from the bytes (an id per create).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    text
}

/// An id for a generated field: the session's sequence (`determinism`), or an
/// ordered random one ([`ordered_uuid4`]).
pub(crate) fn draw_uuid(determinism: Option<&Determinism>) -> String {
    match determinism {
        Some(determinism) => determinism.uuid(),
        None => ordered_uuid4(),
    }
}

/// A created row's id: a version-4 UUID as Python's `str(uuid.uuid4())` prints one,
/// whose first 60 bits are the process's ever-growing stamp
/// (`gateway_world::store::ordered_stamp`, microseconds) and whose other 62 are random.
/// A table's primary key, its `UNIQUE` id and the serving indexes hold rows in id
/// order: an ordered id appends to each of them, where a wholly random one lands on
/// a random leaf page of every index, so each write dirtied pages no other write
/// shared (the same reason UUIDv7 leads with a clock). The id still reads as version
/// 4 (its version and variant bits are set); it is unique and unguessable, but it
/// tells when it was drawn, so never use it as a secret ([`uuid4`] is wholly random).
pub fn ordered_uuid4() -> String {
    let stamp = gateway_world::store::ordered_stamp() & ((1 << 60) - 1);
    let mut b = [0u8; 16];
    // Bits 12..16 of the first half are the version: the stamp goes around them.
    b[..8].copy_from_slice(&(((stamp >> 12) << 16) | (stamp & 0xfff)).to_be_bytes());
    gateway_world::store::fill_random(&mut b[8..]);
    uuid_text(b)
}

/// The clock in epoch seconds: the session's frozen clock (`determinism`), or the process's.
pub(crate) fn read_clock(determinism: Option<&Determinism>) -> f64 {
    determinism.and_then(Determinism::clock).unwrap_or_else(clock)
}

/// A random UUID (version 4), as Python's `str(uuid.uuid4())`.
pub fn uuid4() -> String {
    let mut b = [0u8; 16];
    gateway_world::store::fill_random(&mut b);
    uuid_text(b)
}

/// The world's clock: `GATEWAY_WORLD_CLOCK` (epoch seconds) freezes it.
pub fn clock() -> f64 {
    std::env::var("GATEWAY_WORLD_CLOCK")
        .ok()
        .filter(|v| !v.is_empty())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0))
}

/// `ctx.now()`: the clock as ISO 8601 seconds with `Z`.
pub fn now_iso() -> String {
    gateway_world::snapshot::format_utc(clock().floor() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_sequence_draws_what_its_parent_would_draw_next() {
        let parent = Determinism::new(Some(1_767_225_600.0), 7);
        let _drawn = (parent.uuid(), parent.uuid());
        let fork = parent.fork();
        assert_eq!(fork.clock(), Some(1_767_225_600.0));
        let next: Vec<String> = (0..3).map(|_| parent.uuid()).collect();
        assert_eq!(next, (0..3).map(|_| fork.uuid()).collect::<Vec<_>>());
        fork.restart();
        assert_eq!(fork.uuid(), Determinism::new(None, 7).uuid(), "a reset starts the sequence again");
    }

    /// The id text is Python's `str(uuid.UUID(bytes=…))` with the version and
    /// variant bits set: groups of 8-4-4-4-12 lowercase hex digits.
    #[test]
    fn uuid_text_is_the_hex_in_groups_with_version_and_variant() {
        let bytes: [u8; 16] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10];
        assert_eq!(uuid_text(bytes), "01234567-89ab-4def-bedc-ba9876543210");
        assert_eq!(uuid_text([0xff; 16]), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        assert_eq!(uuid_text([0; 16]), "00000000-0000-4000-8000-000000000000");
    }

    #[test]
    fn ordered_ids_are_version_4_uuids_that_sort_in_the_order_drawn() {
        let drawn: Vec<String> = (0..10_000).map(|_| ordered_uuid4()).collect();
        for id in &drawn {
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{id}");
            assert!(id.chars().all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c)), "{id}");
            assert!(parts[2].starts_with('4'), "version 4: {id}");
            assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'), "RFC 4122 variant: {id}");
        }
        assert!(drawn.windows(2).all(|w| w[0] < w[1]), "each id sorts after the one drawn before it");
        // The stamp leads: an id drawn now is within a second of the clock.
        let stamp = u64::from_str_radix(&drawn[0].replace('-', "")[..12], 16).unwrap() << 12;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
        assert!(now.abs_diff(stamp) < 2_000_000, "stamp {stamp} vs clock {now}");
        // The last 62 bits are random: two ids a microsecond apart differ there too.
        let tails: std::collections::HashSet<&str> = drawn.iter().map(|id| &id[19..]).collect();
        assert_eq!(tails.len(), drawn.len());
    }
}
