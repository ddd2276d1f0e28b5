//! Where the servers' log lines go: one buffer in memory, written to stderr by a
//! flusher thread every [`FLUSH_EVERY`] (sooner when the buffer fills).
//!
//! A request's line costs a copy into the buffer under a lock held only for that copy
//! — no allocation, no channel and no wake-up of another thread per line, which is
//! what `tracing_appender::non_blocking` costs (a `Vec` per line sent down a channel
//! whose writer thread is woken for it: on two cores, a tenth to a fifth of a
//! session's GET throughput went to that; docs/PERFORMANCE.md "Logs and traces").
//! One buffer rather than one per thread keeps the lines in the order they were
//! logged. Idle, a line reaches stderr within [`FLUSH_EVERY`]. As with the appender, a
//! request never waits on stderr: when the buffer is full (stderr not read, or slower
//! than the flood) the line is dropped and counted, and the flusher says how many were
//! lost.
//!
//! Not a general-purpose writer: each `write` is taken to be one whole line, as
//! tracing's fmt layer writes them.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a line may wait in the buffer when the server is idle.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// A buffer this full wakes the flusher at once.
const BATCH: usize = 64 << 10;
/// A buffer this full drops lines until the flusher drains it.
const CAP: usize = 4 << 20;

struct Shared {
    lines: Mutex<Vec<u8>>,
    /// Set by [`FlushGuard`]'s drop: drain once more, then stop.
    stopping: Mutex<bool>,
    wake: Condvar,
    dropped: AtomicU64,
}

/// A `tracing_subscriber` writer of lines to `out` (stderr for the servers).
pub(crate) struct BatchedLines {
    shared: Arc<Shared>,
}

/// Drains the buffer and stops the flusher when dropped (at the end of `main`).
pub(crate) struct FlushGuard {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl BatchedLines {
    /// The writer, and the guard of its flusher thread writing to `out`.
    pub(crate) fn new(out: impl Write + Send + 'static) -> (Self, FlushGuard) {
        let shared = Arc::new(Shared {
            lines: Mutex::new(Vec::with_capacity(BATCH)),
            stopping: Mutex::new(false),
            wake: Condvar::new(),
            dropped: AtomicU64::new(0),
        });
        let flusher = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new().name("log-lines".into()).spawn(move || shared.flush_until_stopped(out)).ok()
        };
        (BatchedLines { shared: Arc::clone(&shared) }, FlushGuard { shared, flusher })
    }
}

impl Shared {
    fn flush_until_stopped(&self, mut out: impl Write) {
        let mut spare = Vec::with_capacity(BATCH);
        loop {
            let stopping = {
                let stopping = self.stopping.lock().unwrap_or_else(PoisonError::into_inner);
                let (stopping, _) = self.wake.wait_timeout(stopping, FLUSH_EVERY).unwrap_or_else(PoisonError::into_inner);
                *stopping
            };
            self.drain(&mut out, &mut spare);
            if stopping {
                return;
            }
        }
    }

    /// Writes out the buffer: swapped for the empty spare under the lock, written
    /// outside it, so loggers wait only for the swap.
    fn drain(&self, out: &mut impl Write, spare: &mut Vec<u8>) {
        std::mem::swap(&mut *self.lines.lock().unwrap_or_else(PoisonError::into_inner), spare);
        if !spare.is_empty() {
            // A failed write (stderr closed) loses these lines; nothing else can be done with them.
            let _ = out.write_all(spare);
            spare.clear();
        }
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let _ = writeln!(out, "gateway: {dropped} log lines dropped (stderr was not read fast enough)");
        }
        let _ = out.flush();
    }

    /// Appends one line.
    fn append(&self, line: &[u8]) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() + line.len() > CAP {
            drop(lines);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let before = lines.len();
        lines.extend_from_slice(line);
        let filled = before < BATCH && lines.len() >= BATCH;
        drop(lines);
        if filled {
            self.wake.notify_one();
        }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        *self.shared.stopping.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_one();
        if let Some(flusher) = self.flusher.take() {
            let _ = flusher.join();
        }
    }
}

/// One event's writer: what tracing's fmt layer formats is appended on `write`.
pub(crate) struct LineWriter<'a>(&'a Shared);

impl Write for LineWriter<'_> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.0.append(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchedLines {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter(&self.shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Collected(Arc<Mutex<Vec<u8>>>);

    impl Write for Collected {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn text(collected: &Collected) -> String {
        String::from_utf8(collected.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn every_threads_lines_arrive_in_their_order_and_the_guard_drains_the_rest() {
        let collected = Collected::default();
        let (lines, guard) = BatchedLines::new(collected.clone());
        let lines = Arc::new(lines);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let lines = Arc::clone(&lines);
                std::thread::spawn(move || {
                    use tracing_subscriber::fmt::MakeWriter as _;
                    for i in 0..1000 {
                        lines.make_writer().write_all(format!("t{t} {i}\n").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        drop(guard);
        let all = text(&collected);
        for t in 0..4 {
            let seen: Vec<usize> = all.lines().filter_map(|l| l.strip_prefix(&format!("t{t} "))).map(|i| i.parse().unwrap()).collect();
            assert_eq!(seen, (0..1000).collect::<Vec<_>>(), "thread {t}: every line, in order");
        }
    }

    #[test]
    fn an_idle_line_is_written_within_the_flush_period() {
        let collected = Collected::default();
        let (lines, _guard) = BatchedLines::new(collected.clone());
        use tracing_subscriber::fmt::MakeWriter as _;
        lines.make_writer().write_all(b"GET / 200\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while text(&collected).is_empty() {
            assert!(std::time::Instant::now() < deadline, "the line never came out");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(text(&collected), "GET / 200\n");
    }

    #[test]
    fn a_full_buffer_drops_lines_and_says_so_rather_than_waiting() {
        /// stderr that nobody reads: every write blocks until released.
        struct Stuck(Arc<(Mutex<bool>, Condvar)>, Collected);
        impl Write for Stuck {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                let (released, wake) = &*self.0;
                let mut released = released.lock().unwrap();
                while !*released {
                    released = wake.wait(released).unwrap();
                }
                self.1.write(bytes)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let collected = Collected::default();
        let (lines, guard) = BatchedLines::new(Stuck(Arc::clone(&gate), collected.clone()));
        use tracing_subscriber::fmt::MakeWriter as _;
        let line = vec![b'x'; 1023].into_iter().chain([b'\n']).collect::<Vec<u8>>();
        // Far more than the cap: the writer must not block even though stderr does.
        for _ in 0..(3 * CAP / line.len()) {
            lines.make_writer().write_all(&line).unwrap();
        }
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        drop(guard);
        let all = text(&collected);
        assert!(all.contains("log lines dropped"), "the loss is said");
        assert!(all.len() <= 2 * CAP + 200, "at most what fit: {}", all.len());
    }
}
