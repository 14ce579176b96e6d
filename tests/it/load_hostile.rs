//! Hostile inputs for the load stage (Format 2, 13, 14, 16): each gives its
//! code at the right place, and nothing panics. Inputs are built in a
//! tempdir at test time.

use std::fs;
use std::io::Write;
use std::path::Path;

use troupe::internals::load::{
    parse_json, parse_package, parse_session, parse_yaml, read_bundle, read_package, scan_pack,
};
use troupe::{Code, Diagnostic};

const MANIFEST: &str = "schema_version: \"0.1\"\npack_id: demo\n";

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn only(diags: &[Diagnostic]) -> &Diagnostic {
    assert_eq!(diags.len(), 1, "{diags:#?}");
    &diags[0]
}

fn line_col(d: &Diagnostic) -> (Option<u32>, Option<u32>) {
    (d.location.line, d.location.column)
}

// ---- pack scan -------------------------------------------------------

#[cfg(unix)]
#[test]
fn symlink_out_of_the_root_is_forbidden_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pack");
    write(&root, "manifest.yaml", MANIFEST.as_bytes());
    write(&root, "npcs/ok.yaml", b"schema_version: \"0.1\"\n");
    std::os::unix::fs::symlink("/etc/passwd", root.join("npcs/link.yaml")).unwrap();
    let l = scan_pack(&root);
    assert!(
        l.value.is_none(),
        "nothing is parsed when a file is forbidden"
    );
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::ForbiddenFile);
    assert_eq!(d.location.file.as_deref(), Some("npcs/link.yaml"));
}

#[test]
fn ref_escaping_the_root_is_path_traversal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "manifest.yaml", MANIFEST.as_bytes());
    write(
        root,
        "scenarios/s.yaml",
        b"schema_version: \"0.1\"\nnpc:\n  ref: ../../etc/passwd\n",
    );
    let l = scan_pack(root);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let pack = l.value.unwrap();
    let (_, doc) = &pack.files["scenarios/s.yaml"];
    let reference = doc.value["npc"]["ref"].as_str().unwrap();
    let err = pack.resolve_ref(reference).unwrap_err();
    assert_eq!(err.code, Code::PathTraversal);
    let d = err.diagnostic(doc, "/npc/ref");
    assert_eq!(d.location.file.as_deref(), Some("scenarios/s.yaml"));
    // `  ref: ../../etc/passwd`: the value starts at line 3, column 8.
    assert_eq!(line_col(&d), (Some(3), Some(8)));
    // The on-disk resolver agrees, and a good ref resolves.
    assert_eq!(
        troupe::internals::load::resolve_ref(root, reference)
            .unwrap_err()
            .code,
        Code::PathTraversal
    );
    assert_eq!(
        pack.resolve_ref("./scenarios/../scenarios/s.yaml").unwrap(),
        "scenarios/s.yaml"
    );
    assert_eq!(
        pack.resolve_ref("npcs/none.yaml").unwrap_err().code,
        Code::MissingFile
    );
    assert_eq!(
        pack.resolve_ref("npcs/\0.yaml").unwrap_err().code,
        Code::PathTraversal
    );
}

#[cfg(unix)]
#[test]
fn ref_through_a_symlink_on_disk_is_path_traversal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pack");
    write(&root, "npcs/a.yaml", b"a: 1\n");
    std::os::unix::fs::symlink(root.join("npcs"), root.join("people")).unwrap();
    let err = troupe::internals::load::resolve_ref(&root, "people/a.yaml").unwrap_err();
    assert_eq!(err.code, Code::PathTraversal);
    assert_eq!(
        troupe::internals::load::resolve_ref(&root, "npcs/a.yaml").unwrap(),
        "npcs/a.yaml"
    );
}

#[test]
fn elf_named_yaml_is_forbidden_binary() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "manifest.yaml", MANIFEST.as_bytes());
    write(
        dir.path(),
        "npcs/npc.yaml",
        b"\x7fELF\x02\x01\x01\0\0\0\0\0",
    );
    let l = scan_pack(dir.path());
    assert!(l.value.is_none());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::ForbiddenBinary);
    assert_eq!(d.location.file.as_deref(), Some("npcs/npc.yaml"));
}

#[test]
fn shell_script_is_forbidden_file_and_no_yaml_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "manifest.yaml", MANIFEST.as_bytes());
    // A broken YAML file: were it parsed, a PARSE diagnostic would appear.
    write(dir.path(), "npcs/broken.yaml", b"a: [\n");
    write(dir.path(), "tools/run.sh", b"echo hi\n");
    let l = scan_pack(dir.path());
    assert!(l.value.is_none());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::ForbiddenFile);
    assert_eq!(d.location.file.as_deref(), Some("tools/run.sh"));
}

#[test]
fn pack_reads_known_folders_and_lists_others() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "manifest.yaml", MANIFEST.as_bytes());
    write(root, "npcs/b.yaml", b"npc_id: b\n");
    write(root, "npcs/a.yml", b"npc_id: a\n");
    write(root, "npcs/notes.txt", b"hello\n");
    write(
        root,
        "sessions/s.jsonl",
        b"{\"troupe\":\"0.1\"}\n{\"id\":\"m\"}\n",
    );
    write(root, "snapshots/x.json", b"{}");
    write(root, "README.md", b"# pack\n");
    write(root, "lore/x.yaml", b"a: 1\n");
    let l = scan_pack(root);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let pack = l.value.unwrap();
    assert!(pack.manifest.is_some());
    let files: Vec<_> = pack.files.keys().map(String::as_str).collect();
    assert_eq!(files, ["npcs/a.yml", "npcs/b.yaml"]);
    assert_eq!(pack.files["npcs/a.yml"].1.file, "npcs/a.yml");
    assert_eq!(pack.sessions["sessions/s.jsonl"].len(), 1);
    assert_eq!(pack.other, ["README.md", "lore/", "npcs/notes.txt"]);
}

#[test]
fn missing_manifest_is_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "npcs/a.yaml", b"npc_id: a\n");
    let l = scan_pack(dir.path());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::MissingFile);
    assert_eq!(d.location.file.as_deref(), Some("manifest.yaml"));
    assert_eq!(l.value.unwrap().files.len(), 1);
}

#[test]
fn pack_yaml_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "manifest.yaml", MANIFEST.as_bytes());
    write(dir.path(), "npcs/a.yaml", b"name: x\nname: y\n");
    let l = scan_pack(dir.path());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Parse);
    assert_eq!(d.location.file.as_deref(), Some("npcs/a.yaml"));
    assert_eq!(line_col(d), (Some(2), Some(1)));
    assert!(l.value.unwrap().files.is_empty());
}

// ---- size ------------------------------------------------------------

/// A sparse 100 MB file: its size is in the metadata, its bytes are never
/// written (nor read).
fn sparse(path: &Path, len: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::File::create(path).unwrap().set_len(len).unwrap();
}

#[test]
fn hundred_megabyte_file_is_limit_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    sparse(&big, 100_000_000);
    let d = only(&read_bundle(&big).diagnostics).clone();
    assert_eq!(d.code, Code::Limit);
    assert_eq!(d.location.file, Some(big.display().to_string()));

    write(dir.path(), "pack/manifest.yaml", MANIFEST.as_bytes());
    sparse(&dir.path().join("pack/npcs/big.yaml"), 100_000_000);
    let l = scan_pack(&dir.path().join("pack"));
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Limit);
    assert_eq!(d.location.file.as_deref(), Some("npcs/big.yaml"));

    let jsonl = dir.path().join("s.jsonl");
    sparse(&jsonl, 100_000_000);
    assert_eq!(
        only(&troupe::internals::load::read_session(&jsonl).diagnostics).code,
        Code::Limit
    );
}

// ---- YAML ------------------------------------------------------------

#[test]
fn duplicate_yaml_keys_are_parse_at_the_duplicate() {
    let l = parse_yaml("f.yaml", b"a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n");
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Parse);
    assert_eq!(line_col(d), (Some(5), Some(3)));
    assert_eq!(d.location.file.as_deref(), Some("f.yaml"));
}

#[test]
fn ten_thousand_levels_of_yaml_are_limit() {
    let n = 10_000;
    let flow = format!("a: {}{}\n", "[".repeat(n), "]".repeat(n));
    let flow_200 = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
    let flow_map = format!("a: {}1{}\n", "{a: ".repeat(n), "}".repeat(n));
    let block = format!("a:\n  {}x\n", "- ".repeat(n));
    for (name, src, at) in [
        // The top mapping is level 1; the 128th nested collection is level
        // 129, the first over the bound.
        ("flow 200", flow_200, (1, 4 + 127)),
        ("flow map", flow_map, (1, 4 + 4 * 127)),
        ("block", block, (2, 3 + 2 * 127)),
        // The YAML scanner reads `[` ahead of the events and stops at its
        // own bound of 255 flow levels: the 256th `[`, column 3 + 256.
        ("flow", flow, (1, 3 + 256)),
    ] {
        let l = parse_yaml("deep.yaml", src.as_bytes());
        let d = only(&l.diagnostics);
        assert_eq!(d.code, Code::Limit, "{name}: {d:?}");
        assert_eq!(line_col(d), (Some(at.0), Some(at.1)), "{name}");
        assert!(d.message.contains("128"), "{name}");
    }
}

#[test]
fn yaml_alias_bomb_is_limit() {
    let bomb = "\
a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
";
    let l = parse_yaml("bomb.yaml", bomb.as_bytes());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Limit);
    // b costs 10 expansions; each `*b` in c costs 11: the 9th brings the
    // total to 10 + 99 = 109 > 100. `c: &c [` is 7 characters, then
    // `*b, ` (4 each): the 9th alias is at column 8 + 8 * 4 = 40.
    assert_eq!(line_col(d), (Some(3), Some(40)));
    // A few aliases are fine.
    let ok = parse_yaml("ok.yaml", b"a: &a {x: 1}\nb: *a\nc: *a\n");
    assert!(ok.diagnostics.is_empty(), "{:?}", ok.diagnostics);
}

#[test]
fn invalid_utf8_is_encoding_at_line_col() {
    let l = parse_yaml("f.yaml", b"a: 1\nb: x\xff\n");
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Encoding);
    assert_eq!(line_col(d), (Some(2), Some(5)));
    let l = parse_json("f.json", b"{\"a\":\n \"\xc3\"}");
    assert_eq!(line_col(only(&l.diagnostics)), (Some(2), Some(3)));
}

#[test]
fn non_string_yaml_keys_are_parse() {
    let l = parse_yaml("f.yaml", b"a: 1\n2: b\n");
    let d = only(&l.diagnostics);
    assert_eq!((d.code, line_col(d)), (Code::Parse, (Some(2), Some(1))));
    let l = parse_yaml("f.yaml", b"a:\n  {x: 1}: b\n");
    assert_eq!(only(&l.diagnostics).code, Code::Parse);
}

#[test]
fn yaml_bom_is_encoding() {
    let l = parse_yaml("f.yaml", b"\xEF\xBB\xBFa: 1\n");
    assert_eq!(only(&l.diagnostics).code, Code::Encoding);
}

// ---- JSON and JSONL --------------------------------------------------

#[test]
fn json_bom_duplicates_and_nan() {
    let d = only(&parse_json("b.json", b"\xEF\xBB\xBF{}").diagnostics).clone();
    assert_eq!((d.code, line_col(&d)), (Code::Encoding, (Some(1), Some(1))));
    let l = parse_json("b.json", b"{\"a\": {\"x\": 1,\n  \"x\": 2}}");
    let d = only(&l.diagnostics);
    assert_eq!((d.code, line_col(d)), (Code::Parse, (Some(2), Some(3))));
    assert_eq!(d.location.pointer.as_deref(), Some("/a/x"));
    for bad in ["{\"x\": NaN}", "{\"x\": -Infinity}", "{\"x\": nan}"] {
        assert_eq!(
            only(&parse_json("b.json", bad.as_bytes()).diagnostics).code,
            Code::Parse
        );
    }
}

#[test]
fn deep_json_is_limit() {
    let src = format!("{{\"a\": {}}}", "[".repeat(100_000));
    let d = only(&parse_json("b.json", src.as_bytes()).diagnostics).clone();
    assert_eq!(d.code, Code::Limit);
}

#[test]
fn truncated_last_jsonl_line_is_parse_at_its_line() {
    let src =
        b"{\"troupe\":\"0.1\",\"kind\":\"session\"}\n{\"id\":\"m1\"}\n{\"id\":\"m2\",\"parts\":[";
    let l = parse_session("s.jsonl", src);
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Parse);
    assert_eq!(d.location.pointer.as_deref(), Some("line:3"));
    assert_eq!(d.location.line, Some(3));
    let s = l.value.unwrap();
    assert!(s.header.is_some());
    assert_eq!(s.len(), 1);
    assert_eq!(s.messages().next().unwrap().value["id"], "m1");
}

#[test]
fn crlf_jsonl_is_accepted() {
    let l = parse_session("s.jsonl", b"{\"troupe\":\"0.1\"}\r\n{\"id\":\"m1\"}\r\n");
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    assert_eq!(
        l.value.unwrap().messages().next().unwrap().value["id"],
        "m1"
    );
}

#[test]
fn jsonl_bom_is_encoding() {
    let l = parse_session("s.jsonl", b"\xEF\xBB\xBF{\"troupe\":\"0.1\"}\n");
    assert_eq!(only(&l.diagnostics).code, Code::Encoding);
}

// ---- packages --------------------------------------------------------

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn package_reads_bundle_and_sessions() {
    let bytes = zip_of(&[
        ("bundle.json", b"{\"troupe\": \"0.1\"}"),
        (
            "sessions/a.jsonl",
            b"{\"troupe\":\"0.1\"}\n{\"id\":\"m\"}\n",
        ),
        ("ir.json", b"{}"),
        ("notes.txt", b"hi"),
    ]);
    let l = parse_package("p.troupe", &bytes);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let p = l.value.unwrap();
    assert_eq!(p.bundle.unwrap().file, "p.troupe!bundle.json");
    assert_eq!(
        p.sessions["sessions/a.jsonl"].file,
        "p.troupe!sessions/a.jsonl"
    );
    assert_eq!(p.ir.as_deref(), Some(&b"{}"[..]));
    assert_eq!(p.other, ["notes.txt"]);
}

#[test]
fn package_diagnostics_inside_name_the_entry() {
    let bytes = zip_of(&[("bundle.json", b"{\"a\": 1,\n\"a\": 2}")]);
    let l = parse_package("p.troupe", &bytes);
    let d = only(&l.diagnostics);
    assert_eq!(d.location.file.as_deref(), Some("p.troupe!bundle.json"));
    assert_eq!(line_col(d), (Some(2), Some(1)));
    let l = parse_package("p.troupe", &zip_of(&[("x.json", b"{}")]));
    let d = only(&l.diagnostics);
    assert_eq!(
        (
            d.code,
            d.location.file.as_deref(),
            d.location.pointer.as_deref()
        ),
        (Code::MissingFile, Some("p.troupe!bundle.json"), Some(""))
    );
}

/// A stored entry named `name`, written by hand (the ZIP writer refuses
/// unsafe names), as a one-entry archive.
fn raw_stored_zip(name: &[u8], data: &[u8]) -> Vec<u8> {
    let crc = crc32(data);
    let mut out = Vec::new();
    let n = name.len() as u16;
    let len = data.len() as u32;
    out.extend_from_slice(b"PK\x03\x04\x14\0\0\0\0\0\0\0\0\0");
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(data);
    let cd = out.len() as u32;
    out.extend_from_slice(b"PK\x01\x02\x14\0\x14\0\0\0\0\0\0\0\0\0");
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&[0; 12]); // extra, comment, disk, int attr, ext attr
    out.extend_from_slice(&0u32.to_le_bytes()); // local header offset
    out.extend_from_slice(name);
    let cd_len = out.len() as u32 - cd;
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0\x01\0\x01\0");
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in data {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn zip_entry_leaving_the_root_is_path_traversal() {
    for name in ["../x", "a/../../x", "/etc/passwd", "a\\b", "a\0b"] {
        let bytes = raw_stored_zip(name.as_bytes(), b"{}");
        let l = parse_package("p.troupe", &bytes);
        assert!(l.value.is_none(), "{name:?}");
        // The archive has no `bundle.json` either: MISSING_FILE after it
        // (Format 14.3: every archive check reports).
        assert_eq!(l.diagnostics.len(), 2, "{:#?}", l.diagnostics);
        assert_eq!(l.diagnostics[1].code, Code::MissingFile);
        let d = &l.diagnostics[0];
        assert_eq!(d.code, Code::PathTraversal, "{name:?}: {d:?}");
        // Format 14.3: the entry is named as the file `<archive>!<entry>`.
        assert_eq!(d.location.pointer.as_deref(), Some(""), "{name:?}");
        assert_eq!(
            d.location.file.as_deref(),
            Some(format!("p.troupe!{name}").as_str())
        );
    }
    // The hand-made archive itself is sound.
    let l = parse_package("p.troupe", &raw_stored_zip(b"bundle.json", b"{}"));
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
}

#[test]
fn zip_script_and_binary_entries_are_forbidden() {
    let l = parse_package(
        "p.troupe",
        &zip_of(&[("bundle.json", b"{}"), ("run.sh", b"x")]),
    );
    let d = only(&l.diagnostics);
    assert_eq!(
        (d.code, d.location.file.as_deref()),
        (Code::ForbiddenFile, Some("p.troupe!run.sh"))
    );
    let l = parse_package(
        "p.troupe",
        &zip_of(&[("bundle.json", b"{}"), ("sessions/a.jsonl", b"\x7fELF\x02")]),
    );
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::ForbiddenBinary);
    assert_eq!(
        d.location.file.as_deref(),
        Some("p.troupe!sessions/a.jsonl")
    );
}

const MIB: usize = 1024 * 1024;

#[test]
fn zip_declared_size_past_the_bound_is_limit() {
    let zeros = vec![0u8; 64 * MIB + 1];
    let bytes = zip_of(&[("bundle.json", b"{}"), ("big.bin.txt", &zeros)]);
    let l = parse_package("p.troupe", &bytes);
    assert!(l.value.is_none());
    let d = only(&l.diagnostics);
    assert_eq!(d.code, Code::Limit);
    assert_eq!(d.location.file.as_deref(), Some("p.troupe!big.bin.txt"));
}

#[test]
fn zip_lying_sizes_are_limit_by_inflated_bytes() {
    // One entry declaring 100 bytes but inflating to 64 MiB + 1: patch the
    // uncompressed size in the local and central headers.
    let zeros = vec![0u8; 64 * MIB + 1];
    let mut bytes = zip_of(&[("z.txt", &zeros), ("bundle.json", b"{}")]);
    let lie = 100u32.to_le_bytes();
    let local = find(&bytes, b"PK\x03\x04").unwrap();
    bytes[local + 22..local + 26].copy_from_slice(&lie);
    let central = find(&bytes, b"PK\x01\x02").unwrap();
    bytes[central + 24..central + 28].copy_from_slice(&lie);
    let l = parse_package("p.troupe", &bytes);
    assert!(l.value.is_none());
    let d = only(&l.diagnostics);
    // The library stops reading at the declared size; the stream going on
    // is reported as LIMIT (never more than the declared size is held).
    assert_eq!(d.code, Code::Limit, "{d:?}");
    assert_eq!(d.location.file.as_deref(), Some("p.troupe!z.txt"));
}

#[test]
fn zip_total_past_the_bound_is_limit() {
    // Five entries of 60 MiB declared: the fifth crosses 256 MiB.
    let zeros = vec![0u8; 60 * MIB];
    let entries: Vec<(String, &[u8])> = (0..5).map(|i| (format!("z{i}.txt"), &zeros[..])).collect();
    let refs: Vec<(&str, &[u8])> = entries.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let l = parse_package("p.troupe", &zip_of(&refs));
    let d = only(&l.diagnostics);
    assert_eq!(
        (d.code, d.location.file.as_deref()),
        (Code::Limit, Some("p.troupe!z4.txt"))
    );
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn not_a_zip_and_big_package() {
    let d = only(&parse_package("p.troupe", b"hello").diagnostics).clone();
    assert_eq!(d.code, Code::Parse);
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("p.troupe");
    sparse(&big, 300_000_000);
    assert_eq!(only(&read_package(&big).diagnostics).code, Code::Limit);
}
