//! `troupe import card|lorebook|chat` (`docs/import.md`): reads what users
//! already have and writes Troupe bundles and sessions.
//!
//! Exit codes: 0 written, 1 the input was refused (diagnostics printed),
//! 3 the output could not be written.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::diag::Diagnostic;
use crate::import::summary::Summary;
use crate::import::{card, chat, lorebook, parse_object, read_card};
use crate::load::text::read_bounded;

/// How an import reports what it did (`docs/import.md` §11).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ReportArgs {
    /// Print the summary as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Fail (exit 1, nothing written) when anything is lost: any warning.
    #[arg(long)]
    pub strict: bool,
}

/// What to import.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// A Character Card V1/V2/V3 (.json, .png, .charx) → a bundle, or a
    /// pack directory with `--pack`.
    Card {
        /// The card file.
        file: PathBuf,
        /// Where to write the bundle (JSON), or the pack directory (new or
        /// empty) with `--pack`.
        #[arg(short, long)]
        output: PathBuf,
        /// Write a pack directory (Format 13) instead of a bundle.
        #[arg(long)]
        pack: bool,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// A V3 lorebook or SillyTavern World Info JSON → a bundle with one world.
    Lorebook {
        /// The lorebook file.
        file: PathBuf,
        /// Where to write the bundle (JSON).
        #[arg(short, long)]
        output: PathBuf,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// A SillyTavern chat log (.jsonl) → a session of the card's scenario.
    Chat {
        /// The chat file.
        file: PathBuf,
        /// The character's card; without one, a card with only the chat's
        /// `character_name` is used.
        #[arg(long)]
        card: Option<PathBuf>,
        /// Where to write the session (JSON Lines).
        #[arg(short, long)]
        output: PathBuf,
        /// Where to write the card's bundle, which the session is checked with.
        #[arg(long)]
        bundle: Option<PathBuf>,
        #[command(flatten)]
        report: ReportArgs,
    },
}

fn fail(diagnostics: &[Diagnostic]) -> i32 {
    eprint!("{}", troupe::render_diagnostics(diagnostics));
    1
}

fn write(path: &Path, text: &str) -> i32 {
    match troupe::files::write_atomic(path, text.as_bytes()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("troupe import: {e}");
            3
        }
    }
}

/// Checks what an import is about to write as `troupe check` would (Format
/// 16.5): a bundle, and a session against that bundle. Errors are printed
/// and give exit 1; nothing is written then.
fn check_output(
    bundle: &Value,
    bundle_name: &str,
    session: Option<(&str, &str)>,
) -> Result<(), i32> {
    let doc = crate::engine::load::bare_document(bundle_name, bundle);
    let mut diags = crate::check::run::check_bundle_document(&doc);
    if let Some((name, text)) = session {
        let loaded = crate::load::parse_session(name, text.as_bytes());
        diags.extend(loaded.diagnostics);
        if let Some(s) = &loaded.value {
            diags.extend(crate::check::run::check_session_document(bundle, s));
        }
    }
    diags.retain(Diagnostic::is_error);
    if diags.is_empty() {
        return Ok(());
    }
    diags.truncate(20);
    eprint!("{}", troupe::render_diagnostics(&diags));
    eprintln!("troupe import: the result does not conform (Format 17.1); nothing was written");
    Err(1)
}

/// Refuses outputs that are inputs (exit 2, before anything runs).
fn refuse(outputs: &[&Path], inputs: &[&Path]) -> Result<(), i32> {
    troupe::files::refuse_inputs(outputs, inputs).map_err(|msg| {
        eprintln!("troupe import: {msg}");
        2
    })
}

fn read(path: &Path) -> Result<(String, Vec<u8>), Vec<Diagnostic>> {
    let file = path.display().to_string();
    read_bounded(&file, path)
        .map(|b| (file, b))
        .map_err(|d| vec![d])
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

fn import_card(path: &Path) -> Result<card::CardImport, Vec<Diagnostic>> {
    let (file, bytes) = read(path)?;
    let raw = read_card(&file, &bytes)?;
    let mut imported = card::card_to_bundle(&raw)
        .map_err(|ds| ds.into_iter().map(|d| d.in_file(&file)).collect::<Vec<_>>())?;
    if bytes.starts_with(crate::import::UTF8_BOM) {
        imported
            .summary
            .converted("", "a byte order mark was dropped");
    }
    Ok(imported)
}

/// Prints the summary (text or `--json`) and its warnings; `Some(1)` when
/// `--strict` refuses a loss (nothing is written then).
fn report(kind: &str, file: &Path, summary: &Summary, args: ReportArgs) -> Option<i32> {
    let name = file.display().to_string();
    let warnings: Vec<Diagnostic> = summary
        .warnings
        .iter()
        .map(|d| d.clone().in_file(&name))
        .collect();
    let refused = args.strict && summary.has_loss();
    if args.json {
        let mut doc = json!({"import": kind, "file": name, "written": !refused});
        if let (Some(o), Value::Object(s)) = (doc.as_object_mut(), summary.to_json()) {
            o.extend(s);
        }
        doc["warnings"] = serde_json::to_value(&warnings).unwrap_or_default();
        print!("{}", pretty(&doc));
    } else {
        print!("{}", summary.to_text());
    }
    if !warnings.is_empty() {
        eprint!("{}", troupe::render_diagnostics(&warnings));
    }
    if refused {
        eprintln!("troupe import: --strict: something would be lost (warnings above); nothing was written");
        Some(1)
    } else {
        None
    }
}

/// Runs an import; returns the exit code.
pub fn run(cmd: Command) -> i32 {
    match cmd {
        Command::Card {
            file,
            output,
            pack,
            report: args,
        } => {
            if let Err(c) = refuse(&[&output], &[&file]) {
                return c;
            }
            match import_card(&file) {
                Ok(imported) => {
                    if let Some(code) = report("card", &file, &imported.summary, args) {
                        return code;
                    }
                    if pack {
                        write_pack(&output, &imported)
                    } else {
                        let name = output.display().to_string();
                        match check_output(&imported.bundle, &name, None) {
                            Ok(()) => write(&output, &pretty(&imported.bundle)),
                            Err(c) => c,
                        }
                    }
                }
                Err(ds) => fail(&ds),
            }
        }
        Command::Lorebook {
            file,
            output,
            report: args,
        } => {
            if let Err(c) = refuse(&[&output], &[&file]) {
                return c;
            }
            let result = read(&file).and_then(|(name, bytes)| {
                let doc = parse_object(&name, &bytes)?;
                let (bundle, mut summary) = lorebook::lorebook_document(&doc, &stem(&file))
                    .map_err(|d| vec![d.in_file(&name)])?;
                if bytes.starts_with(crate::import::UTF8_BOM) {
                    summary.converted("", "a byte order mark was dropped");
                }
                Ok((bundle, summary))
            });
            match result {
                Ok((bundle, summary)) => {
                    if let Some(code) = report("lorebook", &file, &summary, args) {
                        return code;
                    }
                    match check_output(&bundle, &output.display().to_string(), None) {
                        Ok(()) => write(&output, &pretty(&bundle)),
                        Err(c) => c,
                    }
                }
                Err(ds) => fail(&ds),
            }
        }
        Command::Chat {
            file,
            card: card_path,
            output,
            bundle,
            report: args,
        } => {
            let mut outputs = vec![output.as_path()];
            outputs.extend(bundle.as_deref());
            let mut inputs = vec![file.as_path()];
            inputs.extend(card_path.as_deref());
            if let Err(c) = refuse(&outputs, &inputs) {
                return c;
            }
            let result = read(&file).and_then(|(name, bytes)| {
                let imported = match &card_path {
                    Some(p) => import_card(p)?,
                    None => stub_card(&name, &bytes)?,
                };
                let target = chat::ChatTarget {
                    bundle: &imported.bundle,
                    character: &imported.character,
                    scenario: &imported.scenario,
                };
                let (lines, mut summary) = chat::chat_import(&name, &bytes, &target)?;
                // The card's own summary matters only when it was given.
                if card_path.is_some() {
                    let mut all = imported.summary.clone();
                    all.extend(summary);
                    summary = all;
                }
                Ok((imported.bundle.clone(), lines, summary))
            });
            match result {
                Ok((b, lines, summary)) => {
                    if let Some(code) = report("chat", &file, &summary, args) {
                        return code;
                    }
                    let text: String = lines
                        .iter()
                        .map(|l| serde_json::to_string(l).unwrap_or_default() + "\n")
                        .collect();
                    let bundle_name = bundle
                        .as_ref()
                        .map_or("(the card's bundle)".to_string(), |p| {
                            p.display().to_string()
                        });
                    let session_name = output.display().to_string();
                    if let Err(c) = check_output(&b, &bundle_name, Some((&session_name, &text))) {
                        return c;
                    }
                    let code = write(&output, &text);
                    match (code, bundle) {
                        (0, Some(p)) => write(&p, &pretty(&b)),
                        (c, _) => c,
                    }
                }
                Err(ds) => fail(&ds),
            }
        }
    }
}

/// Writes an imported card as a pack directory; refuses a directory that
/// exists and is not empty (exit 3), so nothing is overwritten. The pack
/// is written to a partial folder beside it and checked (Format 16.5): one
/// that does not conform is exit 1 and nothing is left; else the partial
/// folder is renamed into place.
fn write_pack(dir: &Path, imported: &card::CardImport) -> i32 {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        eprintln!(
            "troupe import: {} exists and is not empty; give a new or empty directory",
            dir.display()
        );
        return 3;
    }
    let partial = troupe::files::partial_path(dir);
    let _ = std::fs::remove_dir_all(&partial);
    let code = write_pack_files(&partial, imported);
    if code != 0 {
        let _ = std::fs::remove_dir_all(&partial);
        return code;
    }
    let checked = crate::check::run::check_paths(std::slice::from_ref(&partial));
    let errors: Vec<Diagnostic> = checked
        .diagnostics
        .into_iter()
        .filter(Diagnostic::is_error)
        .take(20)
        .collect();
    if !errors.is_empty() {
        let _ = std::fs::remove_dir_all(&partial);
        eprint!("{}", troupe::render_diagnostics(&errors));
        eprintln!("troupe import: the pack does not conform (Format 17.1); nothing was written");
        return 1;
    }
    let _ = std::fs::remove_dir(dir);
    match std::fs::rename(&partial, dir) {
        Ok(()) => 0,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            eprintln!("troupe import: cannot write {}: {e}", dir.display());
            3
        }
    }
}

fn write_pack_files(dir: &Path, imported: &card::CardImport) -> i32 {
    let files =
        crate::import::pack::card_pack(&imported.bundle, &imported.character, &imported.scenario);
    for f in files {
        let path = dir.join(&f.path);
        if let Some(parent) = path.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                eprintln!("troupe import: cannot create {}: {e}", parent.display());
                return 3;
            }
        }
        if let Err(e) = std::fs::write(&path, crate::import::pack::to_yaml(&f.value)) {
            eprintln!("troupe import: cannot write {}: {e}", path.display());
            return 3;
        }
    }
    0
}

/// A lorebook document → a bundle with its world
/// ([`lorebook::lorebook_document`], without the summary).
pub fn lorebook_bundle(doc: &Value, path: &Path) -> Result<Value, Diagnostic> {
    lorebook::lorebook_document(doc, &stem(path)).map(|(b, _)| b)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The card a chat without `--card` is imported with: a V2 card holding
/// only the chat header's `character_name`.
fn stub_card(file: &str, bytes: &[u8]) -> Result<card::CardImport, Vec<Diagnostic>> {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let header = parse_object(file, first.strip_suffix(b"\r").unwrap_or(first))?;
    let name = header
        .get("character_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("Character");
    let raw = crate::import::RawCard {
        card: json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name}}),
        container: crate::import::CardContainer::Json,
        assets: Vec::new(),
    };
    card::card_to_bundle(&raw)
}
