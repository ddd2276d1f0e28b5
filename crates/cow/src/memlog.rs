//! A write-ahead log kept in process memory, for an overlay that is never reopened
//! (a served session's: its files go with it, and nothing reads them after a
//! restart).
//!
//! SQLite's WAL of a write-heavy session is most of what the session writes: every
//! commit appends every page it touched, random-keyed indexes make that several
//! pages per row, and a checkpoint reads them all back. Kept in a file that is two
//! trips through the kernel per page (ext4's buffered write, then a `pread` at the
//! checkpoint) for bytes nobody will read after the process ends. Here it is a list of
//! fixed-size chunks: a write or read is a copy, growing never moves what is there,
//! and a truncation hands whole chunks back.
//!
//! The memory is bounded: every log in the process draws its chunks from one budget
//! ([`set_memory_wal_budget`], [`DEFAULT_BUDGET`]), and a log that cannot grow within
//! it is written to its file and goes on there (the overlay's "spill").

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per chunk: 64 KiB, so that the budget counts a session that wrote a few
/// rows (a log of a few frames) as 64 KiB, not a megabyte — thousands of such
/// sessions fit in it — while a write-heavy session's 80 MiB log is 1,280 chunks.
pub(crate) const CHUNK: usize = 64 << 10;

/// The process's budget for in-memory logs when none is set (`GATEWAY_WAL_MEMORY`
/// sets it for `gateway`): room for six write-heavy sessions' logs at their largest
/// (a served session checkpoints every 20,000 pages, 80 MiB); the logs of the rest
/// spill to files and run as they did before logs were kept in memory.
pub const DEFAULT_BUDGET: u64 = 512 << 20;

static BUDGET: AtomicU64 = AtomicU64::new(DEFAULT_BUDGET);
static IN_USE: AtomicU64 = AtomicU64::new(0);

/// Set how many bytes all in-memory write-ahead logs of this process may hold
/// together (0: none, every log is a file). Logs already larger keep what they hold.
pub fn set_memory_wal_budget(bytes: u64) {
    BUDGET.store(bytes, Ordering::SeqCst);
}

/// Bytes the in-memory logs of this process hold now.
pub fn memory_wal_bytes() -> u64 {
    IN_USE.load(Ordering::SeqCst)
}

/// Take one chunk's bytes from the budget; false when it has none left.
fn reserve() -> bool {
    let budget = BUDGET.load(Ordering::SeqCst);
    IN_USE.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| used.checked_add(CHUNK as u64).filter(|after| *after <= budget)).is_ok()
}

fn release(chunks: usize) {
    IN_USE.fetch_sub((chunks * CHUNK) as u64, Ordering::SeqCst);
}

/// One log's bytes (see the module's documentation). Bytes past the log's size in
/// its last chunk are always zero, so a log extended past a gap reads zeros there, as
/// a file would.
#[derive(Default)]
pub(crate) struct MemoryLog {
    chunks: Vec<Box<[u8]>>,
}

/// The log could not grow within the process's budget.
#[derive(Debug)]
pub(crate) struct OverBudget;

impl MemoryLog {
    /// Copy `data` in at `offset`, growing by whole chunks.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), OverBudget> {
        let end = offset + data.len() as u64;
        let needed = usize::try_from(end.div_ceil(CHUNK as u64)).map_err(|_| OverBudget)?;
        while self.chunks.len() < needed {
            if !reserve() {
                return Err(OverBudget);
            }
            // Zeroed memory straight from the allocator (untouched pages cost nothing).
            self.chunks.push(vec![0u8; CHUNK].into_boxed_slice());
        }
        self.each_span(offset, data.len(), |chunk, range, done| chunk[range.clone()].copy_from_slice(&data[done..done + range.len()]));
        Ok(())
    }

    /// Fill `buf` from `offset` (the caller keeps it within the log's size).
    pub(crate) fn read(&mut self, offset: u64, buf: &mut [u8]) {
        self.each_span(offset, buf.len(), |chunk, range, done| buf[done..done + range.len()].copy_from_slice(&chunk[range]));
    }

    /// Keep the first `size` bytes: whole chunks past them go back to the budget and
    /// the rest of the last one is zeroed.
    pub(crate) fn truncate(&mut self, size: u64) {
        let keep = usize::try_from(size.div_ceil(CHUNK as u64)).unwrap_or(usize::MAX).min(self.chunks.len());
        release(self.chunks.len() - keep);
        self.chunks.truncate(keep);
        let within = (size % CHUNK as u64) as usize;
        if let (Some(last), true) = (self.chunks.last_mut(), within > 0) {
            last[within..].fill(0);
        }
    }

    /// A copy within the budget, or `None` when it has no room for one.
    pub(crate) fn try_clone(&self) -> Option<MemoryLog> {
        let mut copy = MemoryLog::default();
        for chunk in &self.chunks {
            if !reserve() {
                return None; // `copy` gives back what it took when dropped
            }
            copy.chunks.push(chunk.clone());
        }
        Some(copy)
    }

    /// The chunks in order (the log's bytes, up to its size, then zeros).
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        self.chunks.iter().map(|chunk| &chunk[..])
    }

    /// Call `body(chunk, range within it, bytes done before it)` for each chunk
    /// `len` bytes from `offset` cross, in order.
    fn each_span(&mut self, offset: u64, len: usize, mut body: impl FnMut(&mut [u8], std::ops::Range<usize>, usize)) {
        let mut done = 0;
        while done < len {
            let at = offset + done as u64;
            let (index, within) = ((at / CHUNK as u64) as usize, (at % CHUNK as u64) as usize);
            let n = (CHUNK - within).min(len - done);
            body(&mut self.chunks[index], within..within + n, done);
            done += n;
        }
    }
}

impl Drop for MemoryLog {
    fn drop(&mut self) {
        release(self.chunks.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_across_chunks_read_back_and_a_truncation_zeroes_the_tail() {
        let mut log = MemoryLog::default();
        let data: Vec<u8> = (0..3 * CHUNK / 2).map(|i| (i % 251) as u8).collect();
        let offset = (CHUNK - 100) as u64;
        log.write(offset, &data).unwrap();
        assert_eq!(log.chunks.len(), 3);
        let mut back = vec![0u8; data.len()];
        log.read(offset, &mut back);
        assert_eq!(back, data);
        log.truncate(offset + 10);
        assert_eq!(log.chunks.len(), 1);
        let mut tail = vec![1u8; 100];
        log.read(offset, &mut tail);
        assert_eq!(&tail[..10], &data[..10]);
        assert!(tail[10..].iter().all(|b| *b == 0), "bytes past a truncation read as zeros");
    }
}
