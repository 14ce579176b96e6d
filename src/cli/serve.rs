//! `troupe serve [--listen ADDR] [--database DB] [--config FILE]` and
//! `troupe serve token create --workspace WS [--database DB]`
//! (docs/server.md): sessions as an HTTP/JSON service.
//!
//! Exit codes: 0 after a graceful shutdown (SIGTERM, Ctrl-C) or a token
//! printed; 2 a usage error (a bad `--config`, `--listen` or workspace);
//! 3 a database that cannot be opened or is refused (not Troupe's, or of a
//! newer schema), or an address that cannot be bound.

use std::path::PathBuf;

use troupe_server::{self as server, Config};

/// Arguments of `troupe serve`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub settings: Settings,
}

/// The settings both `serve` and `serve token create` read.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// The address to listen on (default 127.0.0.1:8080; port 0: any free
    /// port, printed as `listening on http://ADDR`).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// A SQLite file (default troupe.db, created when missing; WAL,
    /// synchronous=FULL) or a postgres:// URL.
    #[arg(long, value_name = "DB")]
    pub database: Option<String>,
    /// A JSON file of settings (listen, database, body_limit,
    /// request_timeout_secs, cache_sessions, models, group_commit,
    /// idempotency_key_secs, pg_connections; docs/server.md, "Start"); flags
    /// win over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Subcommands of `troupe serve`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Bearer tokens of workspaces.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `troupe serve token …`.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token for a workspace; prints it on its own line (stored
    /// hashed: it cannot be shown again).
    Create {
        /// The workspace the token opens (1–64 of A-Z a-z 0-9 - _).
        #[arg(long)]
        workspace: String,
        #[command(flatten)]
        settings: Settings,
    },
    /// Revoke a token of a workspace (or all of them with --all): a
    /// running server refuses it (401) from its next request.
    Revoke {
        /// The workspace the token opens.
        #[arg(long)]
        workspace: String,
        /// The token; `-` reads it from standard input (off the process
        /// list).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        token: Option<String>,
        /// Every token of the workspace.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        settings: Settings,
    },
}

impl Settings {
    fn config(&self) -> Result<Config, String> {
        let mut config = match &self.config {
            Some(p) => Config::from_file(p)?,
            None => Config::default(),
        };
        if let Some(l) = &self.listen {
            config.listen = l.clone();
        }
        if let Some(d) = &self.database {
            config.database = d.clone();
        }
        // HOST:PORT with a port of 0–65535: anything else is a usage error
        // (exit 2), not a failure to listen.
        let port = config
            .listen
            .rsplit_once(':')
            .map(|(_, p)| p.parse::<u16>());
        if !matches!(port, Some(Ok(_))) {
            return Err(format!(
                "--listen `{}` is not HOST:PORT with a port from 0 to 65535",
                config.listen
            ));
        }
        Ok(config)
    }
}

/// `troupe serve token revoke`: exit 0 when a token was revoked, 1 when
/// none matched, 2 a usage error, 3 a database error.
fn revoke(workspace: &str, token: Option<String>, settings: &Settings) -> i32 {
    let config = match settings.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("troupe serve: {e}");
            return 2;
        }
    };
    let token = match token.as_deref() {
        Some("-") => {
            let mut line = String::new();
            if std::io::stdin().read_line(&mut line).is_err() {
                eprintln!("troupe serve: cannot read the token from standard input");
                return 2;
            }
            Some(line.trim().to_string())
        }
        other => other.map(str::to_string),
    };
    if let Err(e) = troupe_server::valid_workspace(workspace) {
        eprintln!("troupe serve: {e}");
        return 2;
    }
    match server::revoke_tokens(&config.database, workspace, token.as_deref()) {
        Ok(0) => {
            eprintln!("troupe serve: no such token of workspace {workspace}");
            1
        }
        Ok(n) => {
            println!("revoked {n} token{}", if n == 1 { "" } else { "s" });
            0
        }
        Err(e) => {
            eprintln!("troupe serve: {e}");
            3
        }
    }
}

/// Runs `troupe serve`; returns the exit code.
pub fn run(args: Args) -> i32 {
    match args.command {
        Some(Command::Token(TokenCommand::Revoke {
            workspace,
            token,
            all: _,
            settings,
        })) => revoke(&workspace, token, &settings),
        Some(Command::Token(TokenCommand::Create {
            workspace,
            settings,
        })) => {
            let config = match settings.config() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("troupe serve: {e}");
                    return 2;
                }
            };
            if let Err(e) = troupe_server::valid_workspace(&workspace) {
                eprintln!("troupe serve: {e}");
                return 2;
            }
            match server::create_token(&config.database, &workspace) {
                Ok(token) => {
                    println!("{token}");
                    0
                }
                Err(e) => {
                    eprintln!("troupe serve: {e}");
                    3
                }
            }
        }
        None => {
            let config = match args.settings.config().and_then(|c| c.check().map(|()| c)) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("troupe serve: {e}");
                    return 2;
                }
            };
            match server::serve(config) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("troupe serve: {e}");
                    3
                }
            }
        }
    }
}
