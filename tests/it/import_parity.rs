//! SillyTavern parity, round 2 (issue 44): small inputs built from the
//! issue's descriptions. Each expectation is derived by hand from
//! docs/import.md (§3 timed effects and never-active entries, §5 macros,
//! §9 PNG export) and the format (10.6 `pick` per chat, 18.4 default
//! seats); no value is copied from program output.

use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};
use troupe::internals::check::check_bundle_document;
use troupe::internals::load::parse_json;
use troupe_import::{card, read_card};

use crate::common;

use common::run as troupe;

fn import(card: &Value) -> card::CardImport {
    let bytes = serde_json::to_vec(card).unwrap();
    let raw = read_card("card.json", &bytes).unwrap();
    card::card_to_bundle(&raw).unwrap()
}

fn codes_of(bundle: &Value) -> Vec<String> {
    let text = serde_json::to_string_pretty(bundle).unwrap();
    let doc = parse_json("bundle.json", text.as_bytes()).value.unwrap();
    check_bundle_document(&doc)
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect()
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p.display().to_string()
}

/// Item 1: `{{.gokuRage ?? 0}}` reads the variable `gokurage` (the slug of
/// the name, §1) whose declared default is `0`; it is not a variable
/// `gokurage-0`. Rendering `{{gokurage}}` at the initial state gives `0`.
#[test]
fn a_macros_2_default_reads_the_variable_with_that_default() {
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Goku",
        "description": "Rage: {{.gokuRage ?? 0}}.",
        "first_mes": "Hi."
    }});
    let out = import(&card);
    let b = &out.bundle;
    assert_eq!(b["characters"][0]["description"], "Rage: {{gokurage}}.");
    assert_eq!(
        b["scenarios"][0]["variables"],
        json!([{"id": "gokurage", "type": "string", "default": "0"}])
    );
    assert!(!serde_json::to_string(b).unwrap().contains("gokurage-0"));
    assert!(
        out.summary.warnings.is_empty(),
        "{:?}",
        out.summary.warnings
    );
    assert!(codes_of(b).is_empty(), "{:?}", codes_of(b));
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "b.json", b);
    let (code, stdout, err) = troupe(&["render", &path, "--text", "{{gokurage}}"]);
    assert_eq!((code, stdout.trim()), (0, "0"), "{err}");
}

/// Item 1: two different defaults for one variable, and a read without a
/// default beside one with, are warnings (one declared default).
#[test]
fn conflicting_defaults_are_warnings() {
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Goku",
        "description": "{{.rage ?? 0}} {{.rage ?? 5}}",
        "personality": "{{getvar::rage}}",
        "first_mes": "Hi."
    }});
    let out = import(&card);
    assert_eq!(out.bundle["scenarios"][0]["variables"][0]["default"], "0");
    let msgs: Vec<&str> = out.summary.warnings.iter().map(|d| &*d.message).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs
        .iter()
        .any(|m| m.contains("`5` here and `0` elsewhere")));
    assert!(msgs.iter().any(|m| m.contains("without one elsewhere")));
}

/// Item 1: an `{{if}}` on chat-time state: neither branch reaches the
/// text, and a warning says so.
#[test]
fn an_if_on_chat_state_leaves_both_branches_out_loudly() {
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ann",
        "description": "Ann.{{if .angry}} She shouts.{{else}} She smiles.{{/if}} Done.",
        "first_mes": "Hi."
    }});
    let out = import(&card);
    assert_eq!(
        out.bundle["characters"][0]["description"],
        "Ann.{{// if-block left out at import}} Done."
    );
    assert!(codes_of(&out.bundle).is_empty());
    assert_eq!(out.summary.warnings.len(), 1);
    let w = &out.summary.warnings[0];
    assert!(
        w.message.contains("neither branch reaches the prompt"),
        "{w:?}"
    );
    assert_eq!(w.location.pointer.as_deref(), Some("/data/description"));
}

fn world_info(entries: Value) -> Value {
    json!({ "entries": entries })
}

/// Item 2: SillyTavern's sticky N / cooldown C become Troupe's
/// (N − 1, C), and a cooldown C alone C − 1 (docs/import.md §3 table).
#[test]
fn timed_effects_convert_to_the_same_messages() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(
        dir.path(),
        "wi.json",
        &world_info(json!({
            "0": {"uid": 0, "key": ["a"], "content": "A", "sticky": 3, "cooldown": 2},
            "1": {"uid": 1, "key": ["b"], "content": "B", "sticky": 1},
            "2": {"uid": 2, "key": ["c"], "content": "C", "cooldown": 3},
            "3": {"uid": 3, "key": ["d"], "content": "D", "cooldown": 1, "delay": 4},
            "4": {"uid": 4, "key": ["e"], "content": "E", "sticky": 1, "cooldown": 2}
        })),
    );
    let out = dir.path().join("b.json");
    let (code, _, err) = troupe(&["import", "lorebook", &src, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let e = |i: usize| &b["worlds"][0]["entries"][i];
    let timed = |i: usize| (e(i).get("sticky").cloned(), e(i).get("cooldown").cloned());
    assert_eq!(timed(0), (Some(json!(2)), Some(json!(2))));
    assert_eq!(timed(1), (None, None));
    assert_eq!(timed(2), (None, Some(json!(2))));
    assert_eq!(timed(3), (None, None));
    assert_eq!(e(3)["delay"], 4);
    assert_eq!(timed(4), (None, Some(json!(2))));
    // The two SillyTavern spellings that read the same keep their original.
    assert_eq!(e(1)["extensions"]["sillytavern"]["sticky"], 1);
    assert_eq!(e(4)["extensions"]["sillytavern"]["sticky"], 1);
    assert!(e(0)["extensions"]["sillytavern"].get("sticky").is_none());
}

/// Item 2: a card book's timed effects come back as written on export.
#[test]
fn card_timed_effects_round_trip() {
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ann", "first_mes": "Hi.",
        "character_book": {"entries": [
            {"keys": ["a"], "content": "A", "enabled": true, "insertion_order": 1,
             "extensions": {"sticky": 3, "cooldown": 2}},
            {"keys": ["b"], "content": "B", "enabled": true, "insertion_order": 2,
             "extensions": {"sticky": 1, "cooldown": 2}}
        ]}
    }});
    let out = import(&card);
    let es = &out.bundle["worlds"][0]["entries"];
    assert_eq!(
        (es[0]["sticky"].clone(), es[0]["cooldown"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(
        (es[1].get("sticky"), es[1]["cooldown"].clone()),
        (None, json!(2))
    );
    let back = troupe_import::export::card_from_bundle(&out.bundle, "ann").unwrap();
    let ext = |i: usize| &back["data"]["character_book"]["entries"][i]["extensions"];
    assert_eq!(
        (ext(0)["sticky"].clone(), ext(0)["cooldown"].clone()),
        (json!(3), json!(2))
    );
    assert_eq!(
        (ext(1)["sticky"].clone(), ext(1)["cooldown"].clone()),
        (json!(1), json!(2))
    );
}

/// Item 5: an entry that can never activate is a warning at import (exit
/// 0 without `--strict`, 1 with it) and DEAD_LOGIC when the bundle is
/// checked, so `check --strict` fails on it.
#[test]
fn a_never_active_entry_is_not_silent_after_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(
        dir.path(),
        "wi.json",
        &world_info(json!({"0": {"uid": 0, "key": [], "content": "lost"}})),
    );
    let out = dir.path().join("b.json");
    let o = out.to_str().unwrap();
    let (code, _, err) = troupe(&["import", "lorebook", &src, "-o", o]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("never activates"), "{err}");
    let (code, stdout, err) = troupe(&["check", o]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        format!("{stdout}{err}").contains("DEAD_LOGIC"),
        "{stdout}{err}"
    );
    let (code, _, _) = troupe(&["check", "--strict", o]);
    assert_eq!(code, 1);
    let (code, _, _) = troupe(&["import", "lorebook", &src, "-o", o, "--strict"]);
    assert_eq!(code, 1);
}

fn png_texts(png: &[u8]) -> Vec<(String, Value)> {
    let reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .unwrap();
    reader
        .info()
        .uncompressed_latin1_text
        .iter()
        .map(|t| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(t.text.as_bytes())
                .unwrap();
            (t.keyword.clone(), serde_json::from_slice(&bytes).unwrap())
        })
        .collect()
}

/// Item 5: a V3 card exported as PNG carries `chara` (V2) and `ccv3`.
#[test]
fn a_v3_png_export_is_readable_by_a_v2_reader() {
    let card = json!({"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": "Vee", "description": "d", "first_mes": "Hi.", "nickname": "V",
        "group_only_greetings": []
    }});
    let dir = tempfile::tempdir().unwrap();
    let b = write(dir.path(), "b.json", &import(&card).bundle);
    let png = dir.path().join("vee.png");
    let (code, _, err) = troupe(&[
        "export",
        "card",
        &b,
        "--character",
        "vee",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let texts = png_texts(&std::fs::read(&png).unwrap());
    let names: Vec<&str> = texts.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["chara", "ccv3"]);
    let (v2, v3) = (&texts[0].1, &texts[1].1);
    assert_eq!(
        (v2["spec"].as_str(), v2["spec_version"].as_str()),
        (Some("chara_card_v2"), Some("2.0"))
    );
    assert_eq!(v2["data"]["name"], "Vee");
    assert_eq!(v3["spec"], "chara_card_v3");
    assert_eq!(v2["data"], v3["data"]);
}

fn seat_bundle() -> Value {
    json!({"troupe": "0.1", "kind": "bundle",
        "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult",
                        "description": "{{pick: red, green, blue}}"}],
        "scenarios": [{"id": "s", "name": "S",
            "cast": [{"character": "kai"}, {"seat": "user", "player": true}]}]})
}

/// Item 5: `render --per-chat` draws `pick` as the prompt does (Format
/// 10.6's example: seed 0, `{{pick: red, green, blue}}` → `green`).
#[test]
fn render_per_chat_shows_the_stable_pick() {
    let dir = tempfile::tempdir().unwrap();
    let b = write(dir.path(), "b.json", &seat_bundle());
    let (code, stdout, err) = troupe(&[
        "render",
        &b,
        "--text",
        "{{pick: red, green, blue}}",
        "--per-chat",
    ]);
    assert_eq!((code, stdout.trim()), (0, "green"), "{err}");
}

/// Item 5: a bundle whose player seat is named `user` conforms and runs:
/// the seat is filled by character `user-1` (Format 18.4).
#[test]
fn a_seat_named_user_can_be_run() {
    let dir = tempfile::tempdir().unwrap();
    let b = write(dir.path(), "b.json", &seat_bundle());
    let (code, stdout, err) = troupe(&["check", &b]);
    assert_eq!(code, 0, "{stdout}{err}");
    let script = dir.path().join("script.txt");
    std::fs::write(&script, "hello\n").unwrap();
    let session = dir.path().join("s.jsonl");
    let (code, stdout, err) = troupe(&[
        "run",
        &b,
        "--script",
        script.to_str().unwrap(),
        "--out",
        session.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}{err}");
    let text = std::fs::read_to_string(&session).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        header["players"],
        json!([{"seat": "user", "character": "user-1"}])
    );
    let (code, stdout, err) = troupe(&["check", &b, session.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{err}");
}

/// The entries of a ZIP archive, by name.
fn zip_entries(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut e = zip.by_index(i).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).unwrap();
            (e.name().unwrap().to_string(), data)
        })
        .collect()
}

/// Issue 42 item 5: a card imported from a CHARX archive, exported as
/// CHARX and imported again gives the same bundle (docs/import.md §6).
#[test]
fn a_charx_card_round_trips_through_export() {
    let card = json!({"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": "Vee", "description": "d", "personality": "", "scenario": "s",
        "first_mes": "Hi {{user}}.", "mes_example": "", "creator_notes": "",
        "system_prompt": "", "post_history_instructions": "",
        "alternate_greetings": ["Yo."], "tags": ["t"], "creator": "c",
        "character_version": "1", "extensions": {"x": 1}, "nickname": "V",
        "group_only_greetings": [], "zz_unknown": [1, 2]
    }});
    let dir = tempfile::tempdir().unwrap();
    let mut original = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    original
        .start_file("card.json", zip::write::SimpleFileOptions::default())
        .unwrap();
    std::io::Write::write_all(&mut original, card.to_string().as_bytes()).unwrap();
    let src = dir.path().join("vee.charx");
    std::fs::write(&src, original.finish().unwrap().into_inner()).unwrap();
    let first = dir.path().join("first.json");
    let (code, _, err) = troupe(&[
        "import",
        "card",
        src.to_str().unwrap(),
        "-o",
        first.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let exported = dir.path().join("back.charx");
    let (code, _, err) = troupe(&[
        "export",
        "card",
        first.to_str().unwrap(),
        "--character",
        "vee",
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let entries = zip_entries(&std::fs::read(&exported).unwrap());
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].0, "card.json");
    let back: Value = serde_json::from_slice(&entries[0].1).unwrap();
    assert_eq!(back, card);
    let second = dir.path().join("second.json");
    let (code, _, err) = troupe(&[
        "import",
        "card",
        exported.to_str().unwrap(),
        "-o",
        second.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&first).unwrap(),
        std::fs::read_to_string(&second).unwrap()
    );
}

/// A V2 card exported as CHARX is written as V3, which is all CHARX holds:
/// the same `data` plus an empty `group_only_greetings`.
#[test]
fn a_v2_card_exports_to_charx_as_v3() {
    let data = json!({"name": "Bo", "description": "d", "personality": "",
        "scenario": "", "first_mes": "Hi.", "mes_example": "", "creator_notes": "",
        "system_prompt": "", "post_history_instructions": "", "alternate_greetings": [],
        "tags": [], "creator": "", "character_version": "", "extensions": {}});
    let card = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": data});
    let dir = tempfile::tempdir().unwrap();
    let b = write(dir.path(), "b.json", &import(&card).bundle);
    let out = dir.path().join("bo.charx");
    let (code, _, err) = troupe(&[
        "export",
        "card",
        &b,
        "--character",
        "bo",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let entries = zip_entries(&std::fs::read(&out).unwrap());
    let v3: Value = serde_json::from_slice(&entries[0].1).unwrap();
    let mut want = data.clone();
    want["group_only_greetings"] = json!([]);
    assert_eq!(
        v3,
        json!({"spec": "chara_card_v3", "spec_version": "3.0", "data": want})
    );
}
