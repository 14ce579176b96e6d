//! Hardening of the load stage against a hostile tester (Format 2, 12.1,
//! 13, 14, 16, 17.2): special files, I/O errors, YAML alias depth, pack
//! subfolders, ZIP entry names, NUL in YAML. Inputs are built in a tempdir
//! at test time; expected codes and places come from the spec.

use std::fs;
use std::path::{Path, PathBuf};

use troupe::internals::check::check_paths;
use troupe::internals::load::{read_bundle, read_package, read_session};
use troupe::{Code, Diagnostic};

fn only(diags: &[Diagnostic]) -> &Diagnostic {
    assert_eq!(diags.len(), 1, "{diags:#?}");
    &diags[0]
}

fn codes(diags: &[Diagnostic]) -> Vec<Code> {
    diags.iter().map(|d| d.code).collect()
}

// ---- 1. only regular files are read (Format 16, 17.2) -------------------

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A FIFO named like a bundle, a session and a package is FORBIDDEN_FILE
/// (it exists, it is not a regular file), and no reader opens it.
#[cfg(unix)]
#[test]
fn fifo_is_forbidden_file_for_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["f.json", "f.yaml", "f.jsonl", "f.troupe"] {
        let path = dir.path().join(name);
        mkfifo(&path);
        let diags = match name {
            "f.jsonl" => read_session(&path).diagnostics,
            "f.troupe" => read_package(&path).diagnostics,
            _ => read_bundle(&path).diagnostics,
        };
        let d = only(&diags);
        assert_eq!(d.code, Code::ForbiddenFile, "{name}: {d:?}");
        assert!(d.message.contains("FIFO"), "{name}: {}", d.message);
    }
}

/// `troupe check f.json` on a FIFO reports it without opening it. A writer
/// thread feeds the FIFO, so a checker that does open it gets `{}` and ends
/// (and the test fails on the code) instead of blocking for ever.
#[cfg(unix)]
#[test]
fn check_paths_never_opens_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.json");
    mkfifo(&path);
    let writer = path.clone();
    // If nothing opens the FIFO for reading, this thread stays blocked in
    // `open` and is dropped when the test process ends.
    std::thread::spawn(move || fs::write(writer, b"{}"));
    let checked = check_paths(&[path]);
    assert_eq!(codes(&checked.diagnostics), vec![Code::ForbiddenFile]);
}

/// A symlink given on the command line is followed: to a regular file it is
/// read, to a device (`/dev/null`, like `/dev/zero`) it is FORBIDDEN_FILE.
#[cfg(unix)]
#[test]
fn symlink_on_the_command_line_must_reach_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("z.json");
    std::os::unix::fs::symlink("/dev/null", &dev).unwrap();
    let d = only(&read_bundle(&dev).diagnostics).clone();
    assert_eq!(d.code, Code::ForbiddenFile);
    assert!(d.message.contains("device"), "{}", d.message);
    let checked = check_paths(&[dev]);
    assert_eq!(codes(&checked.diagnostics), vec![Code::ForbiddenFile]);

    let real = dir.path().join("real.json");
    fs::write(&real, br#"{"troupe": "0.1", "kind": "bundle"}"#).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let l = read_bundle(&link);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert_eq!(l.value.unwrap().value["kind"], "bundle");
}

#[test]
fn a_folder_named_like_a_file_is_forbidden_file_and_missing_stays_missing() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("d.jsonl");
    fs::create_dir(&folder).unwrap();
    let d = only(&read_session(&folder).diagnostics).clone();
    assert_eq!(d.code, Code::ForbiddenFile);
    assert!(d.message.contains("folder"), "{}", d.message);
    let missing: PathBuf = dir.path().join("nope.json");
    assert_eq!(
        only(&read_bundle(&missing).diagnostics).code,
        Code::MissingFile
    );
}

// ---- 6. I/O errors other than not-found are IO, exit 3 (17.2) -----------

/// A symlink loop exists as a path but cannot be read: IO (not
/// MISSING_FILE), from the loader and from `troupe check`, which exits 3.
#[cfg(unix)]
#[test]
fn symlink_loop_is_io_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loop.json");
    std::os::unix::fs::symlink(&path, &path).unwrap();
    let d = only(&read_bundle(&path).diagnostics).clone();
    assert_eq!(d.code, Code::Io);
    assert!(
        d.message.starts_with("the file could not be read: "),
        "{}",
        d.message
    );
    assert_eq!(
        codes(&check_paths(std::slice::from_ref(&path)).diagnostics),
        vec![Code::Io]
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_troupe"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
}

/// Permission denied is IO. Root reads any file, so as root this test says
/// so and checks nothing.
#[cfg(unix)]
#[test]
fn permission_denied_is_io() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.json");
    fs::write(&path, b"{}").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read(&path).is_ok() {
        println!("permission_denied_is_io did not run: the tests run as root");
        return;
    }
    assert_eq!(only(&read_bundle(&path).diagnostics).code, Code::Io);
}

// ---- 2. spans are built only when a diagnostic needs one ----------------

/// Loading a session builds no span table: a session of a million small
/// messages must not hold a million tables. The first lookup builds it, with
/// the same positions an eager index would give (lines of the file).
#[test]
fn session_spans_are_lazy_and_exact() {
    let l = troupe::internals::load::parse_session(
        "s.jsonl",
        b"{\"troupe\":\"0.1\"}\n{\"id\":\"a\",\"author\":\"pip\"}\n{\"id\":\"b\", \"x\": [1, {\"k\": 2}]}\n",
    );
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let s = l.value.unwrap();
    assert!(!s.header.as_ref().unwrap().spans.is_built());
    let messages: Vec<_> = s.messages().collect();
    assert!(messages.iter().all(|m| !m.spans.is_built()));
    let m = &messages[1];
    let at = |line, column| troupe::internals::load::LineCol { line, column };
    // `{"id":"b", "x": [1, {"k": 2}]}` on line 3: `"x"` at column 12, its
    // value `[` at 17, `{` at 21, `"k"` at 22 and `2` at 27.
    // The first lookups are passes over the text that keep only the
    // pointer's path; later ones use the table, with the same answers.
    let lookups = |m: &troupe::internals::load::Document| {
        assert_eq!(m.spans.locate_key("/x"), Some(at(3, 12)));
        assert_eq!(m.spans.locate("/x"), Some(at(3, 17)));
        assert_eq!(m.spans.locate("/x/1"), Some(at(3, 21)));
        assert_eq!(m.spans.locate_key("/x/1/k"), Some(at(3, 22)));
        assert_eq!(m.spans.locate("/x/1/k/missing"), Some(at(3, 27)));
        assert_eq!(m.spans.locate_key("/id"), Some(at(3, 2)));
        assert_eq!(m.spans.locate("/nothing"), Some(at(3, 1)));
    };
    lookups(m);
    assert!(!m.spans.is_built(), "7 lookups: no table yet");
    for _ in 0..troupe::internals::load::PATH_LOOKUPS {
        lookups(m);
    }
    assert!(m.spans.is_built());
    lookups(m);
    assert!(!messages[0].spans.is_built());
}

/// A duplicate key is still found at load time, with its pointer, although
/// no span table is kept.
#[test]
fn duplicate_key_in_a_lazy_document_is_parse_with_pointer() {
    let l = troupe::internals::load::parse_json("f.json", b"{\"a\": {\"b\": 1,\n \"b\": 2}}");
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Parse);
    assert_eq!(d.location.pointer.as_deref(), Some("/a/b"));
    assert_eq!((d.location.line, d.location.column), (Some(2), Some(2)));
}

// ---- 3. YAML aliases count their expanded depth (Format 2.4, 16) --------

/// `a: &x` + 100 nested lists (101 levels with the root), then `b:` with
/// `n` nested flow mappings holding `*x`: the alias expands to
/// 1 + n + 100 levels. n = 27 is exactly 128 (allowed); n = 28 is 129:
/// LIMIT at the alias, line 2, column 3 + 4n + 1.
#[test]
fn yaml_alias_counts_the_depth_it_expands_to() {
    let anchor = format!("a: &x {}{}\n", "[".repeat(100), "]".repeat(100));
    let at_depth = |n: usize| format!("{anchor}b: {}*x{}\n", "{c: ".repeat(n), "}".repeat(n));
    let l = troupe::internals::load::parse_yaml("f.yaml", at_depth(27).as_bytes());
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let l = troupe::internals::load::parse_yaml("f.yaml", at_depth(28).as_bytes());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Limit);
    assert_eq!(
        (d.location.line, d.location.column),
        (Some(2), Some(4 * 28 + 4))
    );
}

/// Aliases inside anchored nodes add up: `a0` is 60 levels, `a1` is 60
/// levels around `*a0` (120), `a2` 60 around `*a1` (180): LIMIT at `*a1`,
/// though no single anchor is written deeper than 61 levels.
#[test]
fn chained_yaml_aliases_count_their_depth() {
    let open = "[".repeat(59);
    let close = "]".repeat(59);
    let src = format!(
        "a0: &a0 [{open}{close}]\na1: &a1 [{open}*a0{close}]\na2: &a2 [{open}*a1{close}]\n"
    );
    let l = troupe::internals::load::parse_yaml("f.yaml", src.as_bytes());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Limit);
    // `a2: &a2 ` is 8 characters, then 60 `[`: `*a1` is at column 69.
    assert_eq!((d.location.line, d.location.column), (Some(3), Some(69)));
}

// ---- 4. subfolders of pack folders are not read (Format 13.0, 13.9) -----

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Only `<folder>/<name>.yaml` (and `sessions/<name>.jsonl`) are read; a
/// subfolder (even one named `x.yaml`) and a file of another extension are
/// listed in `other` (ADVISORY) and not parsed: the broken YAML inside them
/// gives no PARSE.
#[test]
fn pack_subfolders_are_listed_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "manifest.yaml",
        b"schema_version: \"0.1\"\npack_id: demo\n",
    );
    write(root, "npcs/a.yaml", b"schema_version: \"0.1\"\n");
    write(root, "npcs/sub/b.yaml", b"a: [unclosed\n");
    write(root, "npcs/sub/deeper/c.yaml", b"a: [unclosed\n");
    write(root, "npcs/x.yaml/c.yaml", b"a: [unclosed\n");
    write(root, "npcs/notes.txt", b"hello");
    write(root, "sessions/sub/s.jsonl", b"not json\n");
    fs::create_dir_all(root.join("sessions/empty")).unwrap();
    let l = troupe::internals::load::scan_pack(root);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let pack = l.value.unwrap();
    assert_eq!(pack.files.keys().collect::<Vec<_>>(), vec!["npcs/a.yaml"]);
    assert!(pack.sessions.is_empty());
    assert_eq!(
        pack.other,
        vec![
            "npcs/notes.txt",
            "npcs/sub/",
            "npcs/x.yaml/",
            "sessions/empty/",
            "sessions/sub/"
        ]
    );
}

/// Subfolders are still screened first: a script two levels down rejects
/// the pack.
#[test]
fn pack_subfolders_are_still_screened() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "manifest.yaml",
        b"schema_version: \"0.1\"\npack_id: demo\n",
    );
    write(root, "npcs/sub/deeper/run.sh", b"echo hi\n");
    let l = troupe::internals::load::scan_pack(root);
    assert!(l.value.is_none());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::ForbiddenFile);
    assert_eq!(d.location.file.as_deref(), Some("npcs/sub/deeper/run.sh"));
}

// ---- 5. ZIP entry names: UTF-8, and entries named as files (Format 14) --

/// A one-entry stored archive whose entry is named `name` (raw bytes), with
/// the UTF-8 name flag (general purpose bit 11) set or not.
fn one_entry_zip(name: &[u8], data: &[u8], utf8_flag: bool) -> Vec<u8> {
    let crc = crc32fast::hash(data);
    let flags: u16 = if utf8_flag { 0x0800 } else { 0 };
    let n = name.len() as u16;
    let len = data.len() as u32;
    let mut out = Vec::new();
    out.extend_from_slice(b"PK\x03\x04\x14\0");
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&[0; 6]); // method (stored), time, date
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(data);
    let cd = out.len() as u32;
    out.extend_from_slice(b"PK\x01\x02\x14\0\x14\0");
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
    out.extend_from_slice(&0u32.to_le_bytes()); // local header offset
    out.extend_from_slice(name);
    let cd_len = out.len() as u32 - cd;
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0\x01\0\x01\0");
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// The one diagnostic of an archive's single bad entry, which must be
/// followed by MISSING_FILE: the archive has no `bundle.json` (Format 14.3).
fn with_missing_bundle(diags: &[Diagnostic]) -> &Diagnostic {
    assert_eq!(diags.len(), 2, "{diags:#?}");
    assert_eq!(diags[1].code, Code::MissingFile);
    &diags[0]
}

/// `caf\xe9.json` is not UTF-8: ENCODING (Format 14.2), with the UTF-8 flag
/// or without it, naming the entry as `<archive>!<entry>` (lossily).
#[test]
fn zip_entry_name_not_utf8_is_encoding() {
    for flag in [true, false] {
        let bytes = one_entry_zip(b"caf\xe9.json", b"{}", flag);
        let l = troupe::internals::load::parse_package("p.troupe", &bytes);
        assert!(l.value.is_none(), "flag {flag}");
        let d = with_missing_bundle(&l.diagnostics);
        assert_eq!(d.code, Code::Encoding, "flag {flag}: {d:?}");
        assert_eq!(
            d.location.file.as_deref(),
            Some("p.troupe!caf\u{fffd}.json")
        );
        assert_eq!(d.location.pointer.as_deref(), Some(""));
    }
    // The same archive with a UTF-8 name is sound (`bundle.json`).
    let l = troupe::internals::load::parse_package(
        "p.troupe",
        &one_entry_zip(b"bundle.json", b"{}", true),
    );
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
}

/// Archive diagnostics about one entry name it as the file
/// `<archive>!<entry>` with pointer `""` (Format 14.3, 17.2).
#[test]
fn zip_entry_diagnostics_name_the_entry_as_the_file() {
    let bytes = one_entry_zip(b"../evil.json", b"{}", true);
    let d = with_missing_bundle(
        &troupe::internals::load::parse_package("p.troupe", &bytes).diagnostics,
    )
    .clone();
    assert_eq!(d.code, Code::PathTraversal);
    assert_eq!(d.location.file.as_deref(), Some("p.troupe!../evil.json"));
    assert_eq!(d.location.pointer.as_deref(), Some(""));
    let bytes = one_entry_zip(b"x.json", b"{}", true);
    let d = only(&troupe::internals::load::parse_package("p.troupe", &bytes).diagnostics).clone();
    assert_eq!(d.code, Code::MissingFile);
    assert_eq!(d.location.file.as_deref(), Some("p.troupe!bundle.json"));
    assert_eq!(d.location.pointer.as_deref(), Some(""));
}

/// A one-entry stored archive whose central directory declares `crc`,
/// `stored` bytes stored and `size` bytes inflated (the local header says
/// the same); the entry's bytes are `data`.
fn stored_zip_declaring(name: &[u8], data: &[u8], crc: u32, stored: u32, size: u32) -> Vec<u8> {
    let n = name.len() as u16;
    let mut out = Vec::new();
    out.extend_from_slice(b"PK\x03\x04\x14\0\0\0");
    out.extend_from_slice(&[0; 6]); // method (stored), time, date
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&stored.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(data);
    let cd = out.len() as u32;
    out.extend_from_slice(b"PK\x01\x02\x14\0\x14\0\0\0");
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&stored.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&[0; 12]);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(name);
    let cd_len = out.len() as u32 - cd;
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0\x01\0\x01\0");
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A stored entry is read in place (borrowed from the archive's bytes)
/// only when the ZIP library would return the same bytes: its CRC-32
/// matching, no more stored than declared (Format 14.2, 16). Otherwise it
/// is read by the library, with the diagnostics that gives: a bad CRC is
/// PARSE, more bytes than declared LIMIT, at `<archive>!<entry>`.
#[test]
fn stored_entries_are_read_in_place_only_as_the_library_reads_them() {
    use std::borrow::Cow;
    use troupe::internals::load::{screen_package, screen_package_view};
    let data = b"{\"troupe\":\"0.1\",\"kind\":\"bundle\"}\n";
    let (crc, len) = (crc32fast::hash(data), data.len() as u32);
    let sound = stored_zip_declaring(b"bundle.json", data, crc, len, len);
    let v = screen_package_view("p.troupe", &sound).value.unwrap();
    assert!(matches!(&v.kept[0].1, Cow::Borrowed(b) if *b == &data[..]));
    assert_eq!(
        screen_package("p.troupe", &sound).value.unwrap().kept[0].1,
        data
    );
    // Fewer bytes stored than declared, the CRC theirs: what the library
    // reads, borrowed too.
    let short = &data[..10];
    let bytes = stored_zip_declaring(b"bundle.json", short, crc32fast::hash(short), 10, len);
    let v = screen_package_view("p.troupe", &bytes).value.unwrap();
    assert!(matches!(&v.kept[0].1, Cow::Borrowed(b) if *b == short));
    let refused = |bytes: &[u8]| {
        let l = screen_package_view("p.troupe", bytes);
        assert!(l.value.is_none());
        let d = only(&l.diagnostics).clone();
        assert_eq!(d.location.file.as_deref(), Some("p.troupe!bundle.json"));
        assert_eq!(
            l.diagnostics,
            screen_package("p.troupe", bytes).diagnostics,
            "both forms say the same"
        );
        d.code
    };
    // A CRC that does not match.
    assert_eq!(
        refused(&stored_zip_declaring(
            b"bundle.json",
            data,
            crc ^ 1,
            len,
            len
        )),
        Code::Parse
    );
    // More stored than the inflated size it declares.
    assert_eq!(
        refused(&stored_zip_declaring(
            b"bundle.json",
            data,
            crc,
            len,
            len - 1
        )),
        Code::Limit
    );
}

// ---- 7. a NUL in YAML text is PARSE at the NUL (YAML 1.2 c-printable) ---

#[test]
fn nul_in_yaml_is_parse_at_the_nul() {
    // The NUL is on line 2; its column is found from the bytes.
    for src in [
        &b"a: 1\nb: \"xy\0z\"\n"[..],
        b"a: 1\nb: 'xy\0z'\n",
        b"a: 1\nb: xyz\0\n",
        b"a: 1\n# xyzw\0\n",
    ] {
        let l = troupe::internals::load::parse_yaml("f.yaml", src);
        let d = only(&l.diagnostics);
        assert_eq!(d.code, Code::Parse, "{src:?}");
        assert_eq!(&*d.message, "a NUL character is not allowed in YAML text");
        let col = src.split(|b| *b == b'\n').nth(1).unwrap();
        let col = col.iter().position(|b| *b == 0).unwrap() as u32 + 1;
        assert_eq!(
            (d.location.line, d.location.column),
            (Some(2), Some(col)),
            "{src:?}"
        );
    }
    // An escaped NUL (`\0` written as two characters) is fine.
    let l = troupe::internals::load::parse_yaml("f.yaml", b"a: \"x\\0y\"\n");
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
}

/// The fast string skip (Format 2.2 strings with escapes and multi-byte
/// characters) keeps columns in characters and ignores brackets in strings.
#[test]
fn json_positions_after_escaped_and_wide_strings() {
    // `{"k\"": "é\\", "b": 1}`: key `k"` at column 2, its value at 9; `"b"`
    // at 16 and `1` at 21 (é is one column, `\"` and `\\` two each).
    let l = troupe::internals::load::parse_json(
        "f.json",
        "{\"k\\\"\": \"é\\\\\", \"b\": 1}".as_bytes(),
    );
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let doc = l.value.unwrap();
    let at = |line, column| troupe::internals::load::LineCol { line, column };
    assert_eq!(doc.spans.locate_key("/k\""), Some(at(1, 2)));
    assert_eq!(doc.spans.locate("/k\""), Some(at(1, 9)));
    assert_eq!(doc.spans.locate_key("/b"), Some(at(1, 16)));
    assert_eq!(doc.spans.locate("/b"), Some(at(1, 21)));
    // 200 brackets inside a string are text, not nesting.
    let src = format!("{{\"a\": \"{}\\\"{}\"}}", "[".repeat(200), "{".repeat(200));
    let l = troupe::internals::load::parse_json("f.json", src.as_bytes());
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
}

/// `troupe cel run` reads its suite with the same reader: a FIFO is refused
/// without being opened (a writer thread feeds it, so a reader that does
/// open it sees an empty suite and exits 0 instead of blocking).
#[cfg(unix)]
#[test]
fn cel_run_refuses_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.txt");
    mkfifo(&path);
    let writer = path.clone();
    std::thread::spawn(move || fs::write(writer, b""));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["cel", "run"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FIFO"));
}

/// A pack folder that cannot be listed is IO (not MISSING_FILE). Root lists
/// any folder, so as root this test says so and checks nothing.
#[cfg(unix)]
#[test]
fn unreadable_pack_folder_is_io() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "manifest.yaml",
        b"schema_version: \"0.1\"\npack_id: demo\n",
    );
    write(root, "npcs/a.yaml", b"schema_version: \"0.1\"\n");
    fs::set_permissions(root.join("npcs"), fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read_dir(root.join("npcs")).is_ok() {
        println!("unreadable_pack_folder_is_io did not run: the tests run as root");
        return;
    }
    let l = troupe::internals::load::scan_pack(root);
    fs::set_permissions(root.join("npcs"), fs::Permissions::from_mode(0o755)).unwrap();
    assert!(l.value.is_none());
    assert_eq!(codes(&l.diagnostics), vec![Code::Io]);
}
