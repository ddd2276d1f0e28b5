//! Rows files as `data import` and `data check` read them (a document, tagged JSONL,
//! bare rows with `--entity`; gzip when the bytes are): any bytes are read or refused
//! without a panic or a hang, and the per-entity counts match the rows handed over.
#![no_main]

use gateway_world::rows::{read_rows, Flow, Seen};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// A directory of this process's own for the file each input is written to.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("gateway-fuzz-rows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let name = if data.starts_with(&[0x1f, 0x8b]) { "rows.json.gz" } else { "rows.json" };
    let path = scratch().join(name);
    std::fs::write(&path, data).expect("writing the input");
    let sources = [path.to_string_lossy().into_owned()];
    for entity in [None, Some("tickets")] {
        let mut seen = Seen::default();
        let mut handed = 0usize;
        let read = read_rows(&sources, entity, &mut seen, None, &mut |row| {
            assert!(row.value.as_object().is_some(), "a row that is not an object was handed over");
            handed += 1;
            Ok(Flow::More)
        });
        if read.is_ok() {
            assert_eq!(seen.values().sum::<usize>(), handed, "the counts do not match the rows");
        }
    }
});
