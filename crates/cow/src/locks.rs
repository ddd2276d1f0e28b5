//! The locks between the connections of one overlay, kept in memory: SQLite's five
//! database-file lock levels, and the eight WAL-index lock slots with the WAL-index
//! regions themselves. All connections of a session live in this process, so no file
//! lock (and no `-shm` file) is needed; the rules are SQLite's unix VFS's, minus the
//! other processes.

use crate::sys::Region;

/// SQLite's lock levels (`SQLITE_LOCK_*`).
pub(crate) const NONE: i32 = 0;
pub(crate) const SHARED: i32 = 1;
pub(crate) const RESERVED: i32 = 2;
pub(crate) const PENDING: i32 = 3;
pub(crate) const EXCLUSIVE: i32 = 4;

/// The database file's locks across every connection of the overlay.
#[derive(Debug, Default)]
pub(crate) struct FileLocks {
    shared: u32,
    reserved: bool,
    pending: bool,
    exclusive: bool,
}

/// What one connection holds of [`FileLocks`].
#[derive(Debug, Default)]
pub(crate) struct HeldLock {
    pub(crate) level: i32,
    reserved: bool,
    pending: bool,
    exclusive: bool,
}

impl FileLocks {
    /// Take `want` for `held`; false (SQLITE_BUSY) when another connection's lock
    /// stands in the way. A refused EXCLUSIVE keeps the PENDING it took, as SQLite expects.
    pub(crate) fn lock(&mut self, held: &mut HeldLock, want: i32) -> bool {
        if held.level >= want {
            return true;
        }
        match want {
            SHARED => {
                if self.pending || self.exclusive {
                    return false;
                }
                self.shared += 1;
                held.level = SHARED;
                true
            }
            RESERVED => {
                if held.level < SHARED || self.reserved {
                    return false;
                }
                self.reserved = true;
                held.reserved = true;
                held.level = RESERVED;
                true
            }
            EXCLUSIVE => {
                if held.level < SHARED {
                    return false;
                }
                if !held.pending {
                    if self.pending || self.exclusive {
                        return false;
                    }
                    self.pending = true;
                    held.pending = true;
                    held.level = PENDING;
                }
                // Our own SHARED is counted: anyone else's keeps us out.
                if self.shared > 1 {
                    return false;
                }
                self.exclusive = true;
                held.exclusive = true;
                held.level = EXCLUSIVE;
                true
            }
            _ => false,
        }
    }

    /// Drop `held` to `to` (SHARED or NONE).
    pub(crate) fn unlock(&mut self, held: &mut HeldLock, to: i32) {
        if held.level <= to {
            return;
        }
        if std::mem::take(&mut held.exclusive) {
            self.exclusive = false;
        }
        if std::mem::take(&mut held.pending) {
            self.pending = false;
        }
        if std::mem::take(&mut held.reserved) {
            self.reserved = false;
        }
        if to == NONE && held.level >= SHARED {
            self.shared -= 1;
        }
        held.level = to;
    }

    /// Whether any connection holds RESERVED or more.
    pub(crate) fn reserved(&self) -> bool {
        self.reserved || self.pending || self.exclusive
    }
}

/// `SQLITE_SHM_*` flags of `xShmLock`.
pub(crate) const SHM_UNLOCK: i32 = 1;
pub(crate) const SHM_SHARED: i32 = 4;
pub(crate) const SHM_EXCLUSIVE: i32 = 8;
/// Lock slots in a WAL index (`SQLITE_SHM_NLOCK`).
const SHM_SLOTS: usize = 8;

/// The WAL index of an overlay: its regions and lock slots, shared by its connections.
#[derive(Default)]
pub(crate) struct Shm {
    regions: Vec<Region>,
    region_size: usize,
    /// Per slot: readers holding it shared (> 0), or -1 when held exclusively.
    slots: [i32; SHM_SLOTS],
    /// Connections with the index mapped.
    mappers: usize,
}

/// What one connection holds of the WAL index.
#[derive(Debug, Default)]
pub(crate) struct ShmHeld {
    shared: u8,
    exclusive: u8,
    mapped: bool,
}

impl Shm {
    /// The address of region `index` (`size` bytes), allocated when `extend`; null
    /// when it does not exist and may not be made. The first connection to map an
    /// index that nobody has mapped starts from zeros, as the unix VFS truncates a
    /// `-shm` file nobody holds: SQLite then rebuilds it from the WAL.
    pub(crate) fn map(&mut self, held: &mut ShmHeld, index: usize, size: usize, extend: bool) -> std::io::Result<*mut u8> {
        if !held.mapped {
            if self.mappers == 0 {
                self.regions.clear();
            }
            self.mappers += 1;
            held.mapped = true;
        }
        if self.regions.is_empty() {
            self.region_size = size;
        } else if size != self.region_size {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "WAL-index regions of two sizes"));
        }
        while self.regions.len() <= index {
            if !extend {
                return Ok(std::ptr::null_mut());
            }
            self.regions.push(Region::new(size)?);
        }
        Ok(self.regions[index].as_ptr())
    }

    /// Take or release `n` slots from `offset`; false (SQLITE_BUSY) when another
    /// connection holds one of them in a conflicting way.
    pub(crate) fn lock(&mut self, held: &mut ShmHeld, offset: usize, n: usize, flags: i32) -> bool {
        if offset + n > SHM_SLOTS || n == 0 {
            return false;
        }
        let mask = (((1u16 << (offset + n)) - (1u16 << offset)) & 0xff) as u8;
        let slots = offset..offset + n;
        if flags & SHM_UNLOCK != 0 {
            for slot in slots {
                let bit = 1u8 << slot;
                if held.exclusive & bit != 0 {
                    self.slots[slot] = 0;
                } else if held.shared & bit != 0 {
                    self.slots[slot] -= 1;
                }
            }
            held.exclusive &= !mask;
            held.shared &= !mask;
            return true;
        }
        if flags & SHM_SHARED != 0 {
            if held.shared & mask == mask {
                return true;
            }
            if slots.clone().any(|slot| self.slots[slot] < 0 && held.exclusive & (1 << slot) == 0) {
                return false;
            }
            for slot in slots {
                if held.shared & (1 << slot) == 0 && held.exclusive & (1 << slot) == 0 {
                    self.slots[slot] += 1;
                }
            }
            held.shared |= mask;
            return true;
        }
        if flags & SHM_EXCLUSIVE != 0 {
            if slots.clone().any(|slot| held.exclusive & (1 << slot) == 0 && self.slots[slot] != 0) {
                return false;
            }
            for slot in slots {
                self.slots[slot] = -1;
            }
            held.exclusive |= mask;
            return true;
        }
        false
    }

    /// The connection lets go of the index (and of any slot it still holds); the
    /// last one out frees the regions.
    pub(crate) fn unmap(&mut self, held: &mut ShmHeld) {
        self.lock(held, 0, SHM_SLOTS, SHM_UNLOCK | SHM_SHARED);
        if std::mem::take(&mut held.mapped) {
            self.mappers -= 1;
            if self.mappers == 0 {
                self.regions.clear();
            }
        }
    }

    /// Bytes of WAL index held (mapped, not necessarily touched).
    pub(crate) fn bytes(&self) -> usize {
        self.regions.len() * self.region_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_share_a_writer_waits_for_them_and_pending_keeps_new_readers_out() {
        let mut locks = FileLocks::default();
        let (mut a, mut b) = (HeldLock::default(), HeldLock::default());
        assert!(locks.lock(&mut a, SHARED) && locks.lock(&mut b, SHARED));
        assert!(locks.lock(&mut a, RESERVED));
        assert!(!locks.lock(&mut b, RESERVED), "one reserved at a time");
        assert!(!locks.lock(&mut a, EXCLUSIVE), "b still reads");
        assert_eq!(a.level, PENDING);
        let mut c = HeldLock::default();
        assert!(!locks.lock(&mut c, SHARED), "pending keeps new readers out");
        locks.unlock(&mut b, NONE);
        assert!(locks.lock(&mut a, EXCLUSIVE));
        assert!(locks.reserved());
        locks.unlock(&mut a, SHARED);
        assert!(!locks.reserved());
        assert!(locks.lock(&mut c, SHARED));
        locks.unlock(&mut a, NONE);
        locks.unlock(&mut c, NONE);
        assert_eq!(locks.shared, 0);
    }

    #[test]
    fn wal_index_slots_exclude_as_sqlite_expects() {
        let mut shm = Shm::default();
        let (mut a, mut b) = (ShmHeld::default(), ShmHeld::default());
        assert!(shm.lock(&mut a, 3, 1, 2 | SHM_SHARED));
        assert!(shm.lock(&mut b, 3, 1, 2 | SHM_SHARED));
        assert!(!shm.lock(&mut b, 3, 1, 2 | SHM_EXCLUSIVE), "a still reads slot 3");
        assert!(shm.lock(&mut a, 3, 1, SHM_UNLOCK | SHM_SHARED));
        assert!(shm.lock(&mut b, 3, 1, SHM_UNLOCK | SHM_SHARED));
        assert!(shm.lock(&mut b, 1, 7, 2 | SHM_EXCLUSIVE), "recovery takes every slot but the first");
        assert!(!shm.lock(&mut a, 4, 1, 2 | SHM_SHARED));
        shm.unmap(&mut b);
        assert!(shm.lock(&mut a, 4, 1, 2 | SHM_SHARED));
    }
}
