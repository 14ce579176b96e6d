//! `troupe play PACK [settings | --resume SESSION [--at ID]]` (Format 20,
//! 18.10): the interactive form of
//! `run`. Each line read is an input, except the commands `/state` (the
//! visible state), `/undo` (the next input becomes a sibling of the last
//! one; nothing written is lost), `/help` and `/quit`. Reads standard
//! input, so it also runs from a pipe.

use std::io::{BufRead, Write};

use super::run::{start_with, ModelArgs, RuntimeArg, SessionArgs};
use troupe::transcript::{self, state_line};
use troupe::{ErrorKind, RuntimeChoice};

/// Arguments of `troupe play`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub session: SessionArgs,
    /// Show what the player does not see: each turn's rule and the hidden
    /// variables (Format 8.1 `visibility`).
    #[arg(long)]
    pub debug: bool,
    /// The runtime: `rules` (the default) or `model` (Format 24); `fake`, a
    /// test double, is refused.
    #[arg(long, value_enum, default_value = "rules")]
    pub runtime: RuntimeArg,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Play in the web page instead (docs/web.md): `troupe serve` on a
    /// temporary SQLite database with the pack uploaded, its loopback URL
    /// printed on its own line; the settings above are chosen in the page.
    #[cfg(feature = "server")]
    #[arg(long)]
    pub web: bool,
    /// With `--web`: the address to listen on (default 127.0.0.1:0, any
    /// free port).
    #[cfg(feature = "server")]
    #[arg(long, value_name = "ADDR", requires = "web")]
    pub listen: Option<String>,
    /// With `--web`: start the system browser on the page (`xdg-open`).
    #[cfg(feature = "server")]
    #[arg(long, requires = "web")]
    pub open: bool,
}

/// The help line; `kept` says where an undone turn stays (Format 18.4: a
/// branch of the session, in the session file only with `--out`).
fn help(kept: bool) -> String {
    format!(
        "Type what you say and press Enter. Commands: /to ID TEXT says TEXT to character ID, who answers (Format 18.9), /state shows the state, /undo takes back your last turn ({}), /quit ends.",
        if kept {
            "it stays in the session file as a branch"
        } else {
            "it stays in the session as a branch; add --out FILE to keep the session in a file"
        }
    )
}

/// Runs `troupe play`; returns the exit code.
pub fn run(args: Args) -> i32 {
    #[cfg(feature = "server")]
    if args.web {
        return web(&args);
    }
    let file = match super::run::prepare_out(&args.session, &args.model, &[]) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let pack = match super::open_pack_api(&args.session.pack, args.session.open_options()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (runtime, log) = match args.runtime {
        RuntimeArg::Rules => (RuntimeChoice::Rules, None),
        RuntimeArg::Fake => {
            eprintln!("troupe play: the fake runtime is a test double and is not offered to people (Format 18.7)");
            return 2;
        }
        RuntimeArg::Model => match args.model.runtime("play") {
            Ok(r) => {
                let log = r.log();
                (r.adapter(), Some(log))
            }
            Err(c) => return c,
        },
    };
    let mut session = match start_with(&pack, &args.session, runtime, file.as_ref()) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let mut code = 0;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}{}",
        troupe::escape_controls(&if args.session.resume.is_some() {
            transcript::resumed(&session, args.debug)
        } else {
            transcript::start(&session, args.debug)
        }),
        help(file.is_some())
    );
    let mut lines = stdin.lock().lines();
    loop {
        if session.ended() {
            let _ = writeln!(
                out,
                "The session is over. /undo to take back the last turn, /quit to leave."
            );
        }
        let _ = write!(out, "> ");
        let _ = out.flush();
        let line = match lines.next() {
            Some(Ok(line)) => line,
            // A line that is not UTF-8 is refused and play goes on (Format
            // 20); the bytes were consumed.
            Some(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                let _ = writeln!(
                    out,
                    "That line is not valid UTF-8 text; it was not said. Type it again."
                );
                continue;
            }
            Some(Err(e)) => {
                eprintln!("troupe play: cannot read standard input: {e}");
                break;
            }
            None => break,
        };
        let line = line.trim_end_matches('\r');
        match line.trim() {
            "" => continue,
            "/quit" | "/exit" => break,
            "/help" => {
                let _ = writeln!(out, "{}", help(file.is_some()));
            }
            "/state" => {
                let st = if args.debug {
                    session.state()
                } else {
                    session.visible_state()
                };
                let _ = writeln!(
                    out,
                    "at {}: {}",
                    session.current_id().unwrap_or("(start)"),
                    state_line(&st)
                );
                // The location, when the scene has one (an empty one says
                // nothing).
                if let Some(l) = st
                    .get("scene.location")
                    .and_then(|v| v.as_str())
                    .filter(|l| !l.is_empty())
                {
                    let _ = writeln!(out, "{}", troupe::escape_controls(&format!("scene: {l}")));
                }
            }
            "/undo" => {
                if session.undo() {
                    let _ = writeln!(
                        out,
                        "Undone. Back at {}: {}",
                        session.current_id().unwrap_or("(start)"),
                        state_line(&session.visible_state())
                    );
                } else {
                    let _ = writeln!(out, "Nothing to undo.");
                }
            }
            cmd if cmd.starts_with('/') && !cmd.starts_with("//") && !cmd.starts_with("/to ") => {
                let _ = writeln!(
                    out,
                    "unknown command `{cmd}`: the commands are /to, /state, /undo, /quit and /help; to say a line that starts with `/`, begin it with `//`"
                );
            }
            _ if session.ended() => {}
            _ => {
                // `/to ID TEXT`: the host names the responder (Format 18.9).
                let (to, line) = match line.trim_start().strip_prefix("/to ") {
                    Some(rest) => {
                        let rest = rest.trim_start();
                        let (id, text) = rest.split_once(' ').unwrap_or((rest, ""));
                        (Some(id.to_string()), text.trim_start())
                    }
                    None => (None, line),
                };
                // `//…` says a line that starts with `/` (Format 20).
                let line = line
                    .strip_prefix('/')
                    .filter(|l| l.starts_with('/'))
                    .unwrap_or(line);
                let before = session.state();
                let turn = match &to {
                    Some(c) => session.turn_to(c, line),
                    None => session.turn(line),
                };
                match turn {
                    Ok(mut r) => {
                        // Hidden variables (Format 8.1) are not shown to the
                        // player, nor the rule, unless --debug.
                        if !args.debug {
                            let visible = session.visible_state();
                            let all = session.state();
                            r.state_delta
                                .retain(|k, _| visible.contains_key(k) || !all.contains_key(k));
                        }
                        let mut text = transcript::turn(&session, line, &before, &r, args.debug);
                        if let Some(log) = &log {
                            let rec = log
                                .lock()
                                .ok()
                                .and_then(|l| troupe::model_runtime::turn_record(&l, &r.messages));
                            text.push_str(&transcript::model(&r, rec.as_ref()));
                        }
                        let _ = write!(out, "{}", troupe::escape_controls(&text));
                        let _ = writeln!(
                            out,
                            "  visible: {}",
                            troupe::escape_controls(&state_line(&session.visible_state()))
                        );
                        if r.score.is_some() {
                            let _ = write!(
                                out,
                                "{}",
                                troupe::escape_controls(&transcript::score(&r.score))
                            );
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::Ended => {}
                    // `/to` a character who cannot answer now (Format
                    // 18.9): nothing was written; say something else.
                    Err(e) if e.kind() == ErrorKind::Refused => {
                        let _ = writeln!(out, "{e}");
                    }
                    // The turn was not taken (Format 16.2); the player may
                    // say something else.
                    Err(e) if e.kind() == ErrorKind::Limit => {
                        eprintln!("error[LIMIT]: {}", e.diagnostics()[0].message)
                    }
                    Err(e) if e.kind() == ErrorKind::Runtime => {
                        // Nothing of the failed turn was written (Format 24.6).
                        let d = &e.diagnostics()[0];
                        eprintln!("troupe play: {}: {}", d.code, d.message);
                        code = troupe::model_runtime::exit_code(d.code);
                        break;
                    }
                    Err(e) => {
                        eprintln!("troupe play: {e}");
                        return 3;
                    }
                }
            }
        }
    }
    let _ = writeln!(out);
    super::run::commit_out(&pack, session, file, code)
}

/// `troupe play PACK --web [--listen ADDR] [--open]` (docs/web.md): the
/// pack compiled to a package and served with the page until Ctrl-C.
/// Exit codes: 0 after Ctrl-C or SIGTERM, 3 when the pack cannot be read
/// or the address cannot be bound.
#[cfg(feature = "server")]
fn web(args: &Args) -> i32 {
    let pack = match super::open_pack_api(&args.session.pack, args.session.open_options()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let package = match pack.compile() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("troupe play: cannot compile the pack: {e}");
            return 3;
        }
    };
    let listen = args.listen.as_deref().unwrap_or("127.0.0.1:0");
    match troupe_server::web::play(package, listen, args.open) {
        Ok(()) => 0,
        Err(m) => {
            eprintln!("troupe play: {m}");
            3
        }
    }
}
