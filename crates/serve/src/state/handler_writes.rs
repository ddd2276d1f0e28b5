//! A handler's writes as one transaction: what a Python handler (or the `before`
//! gate) writes through `ctx` lands together when it answers, and none of it when
//! it raises, times out or its worker dies — a failed request never leaves a
//! half-written row behind (issue 26 item 6).
//!
//! The writer is taken at the handler's first write, not before: a handler that
//! only reads (a gate, most of them) reads through the pooled readers and never
//! holds up other requests' writes. From its first write on, the handler holds the
//! session's writer with a group open ([`Store::begin_group`]): each `ctx` write is
//! a batch of its own (a refused one, which the handler may catch, undoes only
//! itself), and its reads go through the writer too, so it sees its own writes.
//! [`HandlerWrites::finish`] commits the group or rolls it back. A call pins its
//! database first (`WorldState::pin`).

use super::db::Db;
use gateway_world::store::Store;
use gateway_world::Result;
use std::collections::BTreeSet;
use std::sync::{Arc, MutexGuard};

/// The session's database as it was when a handler call began (a reset during the
/// call swaps in a new one; the call goes on with the one it started on).
pub(crate) struct Pinned(Arc<Db>);

impl Pinned {
    /// Hold `db` for the length of a call.
    pub(super) fn new(db: Arc<Db>) -> Pinned {
        Pinned(db)
    }
}

/// The writes of one handler call.
pub(crate) struct HandlerWrites<'a> {
    db: &'a Db,
    /// The writer with the call's group open, from its first write.
    writer: Option<MutexGuard<'a, Store>>,
    /// Entities written (their cached columns are dropped after the commit).
    touched: BTreeSet<String>,
}

impl<'a> HandlerWrites<'a> {
    /// No write yet.
    pub(crate) fn new(pinned: &'a Pinned) -> HandlerWrites<'a> {
        HandlerWrites { db: &pinned.0, writer: None, touched: BTreeSet::new() }
    }

    /// One write of the call, on its open group (opened by the first).
    pub(crate) fn write<T>(&mut self, entity: &str, body: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        let store = match &mut self.writer {
            Some(store) => store,
            slot => {
                let mut store = self.db.lock_writer();
                store.begin_group()?;
                slot.insert(store)
            }
        };
        let written = body(store);
        if written.is_ok() {
            self.touched.insert(entity.to_string());
        }
        written
    }

    /// The writer, once the call wrote: its reads go there to see its own writes.
    pub(crate) fn store(&self) -> Option<&Store> {
        self.writer.as_deref()
    }

    /// Run `read` on the call's view of the database: the writer once the call
    /// wrote, else a pooled reader.
    pub(crate) fn read<T>(&self, read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>) -> Result<T> {
        match self.store() {
            Some(store) => Ok(read(store.connection())?),
            None => self.db.read(read),
        }
    }

    /// End the call: its writes committed when `keep`, else rolled back. A commit
    /// that fails undoes them all and is the error.
    pub(crate) fn finish(mut self, keep: bool) -> Result<()> {
        let Some(mut store) = self.writer.take() else { return Ok(()) };
        let ended = if keep {
            store.commit_group()
        } else {
            store.abort_group();
            Ok(())
        };
        drop(store);
        // Dropped after the commit, so no reader caches a column of the old rows
        // under the new generation.
        for entity in &self.touched {
            self.db.invalidate(Some(entity));
        }
        ended
    }
}

impl Drop for HandlerWrites<'_> {
    /// A call that never finished (a panic on the way) keeps none of its writes.
    fn drop(&mut self) {
        if let Some(mut store) = self.writer.take() {
            store.abort_group();
            drop(store);
            self.touched.iter().for_each(|entity| self.db.invalidate(Some(entity)));
        }
    }
}
