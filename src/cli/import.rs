//! `troupe import card|lorebook|chat` (`docs/import.md`): reads what users
//! already have and writes Troupe bundles and sessions.
//!
//! Exit codes: 0 written, 1 the input was refused (diagnostics printed),
//! 3 the output could not be written.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use troupe::{Diagnostic, ErrorKind};
use troupe_import::cards::{self, CardImport, Summary};

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
        /// `character_name` is used. In a group chat every other member
        /// becomes a character too (docs/import.md §7.1).
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
    let mut diags = cards::check_import(bundle, bundle_name, session);
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

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
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
            match cards::import_card(&file) {
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
                Err(e) => fail(e.diagnostics()),
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
            let result = cards::import_lorebook(&file);
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
                Err(e) => fail(e.diagnostics()),
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
            let result = cards::import_chat(&file, card_path.as_deref());
            match result {
                Ok(imported) => {
                    if let Some(code) = report("chat", &file, &imported.summary, args) {
                        return code;
                    }
                    let text = imported.jsonl();
                    let b = imported.bundle;
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
                Err(e) => fail(e.diagnostics()),
            }
        }
    }
}

/// Writes an imported card as a pack directory ([`cards::write_card_pack`]):
/// a directory that exists and is not empty is refused (exit 3), so
/// nothing is overwritten; a pack that does not conform is exit 1 and
/// nothing is left.
fn write_pack(dir: &Path, imported: &CardImport) -> i32 {
    match cards::write_card_pack(dir, imported) {
        Ok(()) => 0,
        Err(e) if e.kind() == ErrorKind::Invalid => {
            eprint!("{}", troupe::render_diagnostics(e.diagnostics()));
            eprintln!(
                "troupe import: the pack does not conform (Format 17.1); nothing was written"
            );
            1
        }
        Err(e) => {
            eprintln!("troupe import: {e}");
            3
        }
    }
}
