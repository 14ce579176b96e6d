//! Real-world JSON and JSON Lines files (SillyTavern cards and chats, see
//! `data/real/SOURCES.md` in the shared directory) load without a
//! diagnostic: the loader accepts what ordinary tools write. The data is not
//! in the repository: it is found at `$TROUPE_SHARED_DIR` or
//! `<CARGO_MANIFEST_DIR>/../shared`.

use std::path::PathBuf;

use troupe::internals::load::{read_bundle, read_session};

use crate::common;

fn real_dir() -> Option<PathBuf> {
    common::shared("data/real", "load_real")
}

#[test]
fn real_json_and_jsonl_load_cleanly() {
    let Some(dir) = real_dir() else { return };
    let mut seen = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let diags = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let l = read_bundle(&path);
                let doc = l.value.as_ref().expect("a document");
                // Every member of the top object has a position.
                for key in doc.value.as_object().unwrap().keys() {
                    let p = format!("/{}", troupe::internals::diag::escape_token(key));
                    assert!(
                        doc.spans.entries().contains_key(&p),
                        "{p} in {}",
                        path.display()
                    );
                }
                l.diagnostics
            }
            Some("jsonl") => {
                let l = read_session(&path);
                let s = l.value.as_ref().expect("a session");
                assert!(s.header.is_some(), "{}", path.display());
                l.diagnostics
            }
            _ => continue,
        };
        assert!(diags.is_empty(), "{}: {diags:#?}", path.display());
        seen += 1;
    }
    assert!(seen >= 9, "expected the 9 JSON/JSONL files, saw {seen}");
}
