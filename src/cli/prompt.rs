//! `troupe prompt PACK SESSION --at ID [--char C] [--json]` (Format 24.3):
//! prints exactly what the model runtime would send when C answers
//! message ID, so authors can inspect the prompt.

use serde_json::Value;

use super::run::StructuredArg;
use troupe::model_runtime::{self, Settings};

/// Arguments of `troupe prompt`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub at: super::SessionAt,
    /// Who answers (default: the speaker the scenario's turn order chooses
    /// for a reply to the message, Format 18.9, 24.3).
    #[arg(long = "char", value_name = "C")]
    pub character: Option<String>,
    /// The request's `model`.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub model: String,
    /// How the answer's shape is asked for (Format 24.4).
    #[arg(long, value_enum, default_value = "json_schema")]
    pub structured: StructuredArg,
    /// The request's `max_tokens`.
    #[arg(long, default_value_t = model_runtime::DEFAULT_MAX_TOKENS, value_parser = super::parse_max_tokens)]
    pub max_tokens: u32,
    /// The request's `temperature`.
    #[arg(long, value_parser = super::parse_temperature)]
    pub temperature: Option<f64>,
}

/// Prints the request; returns the exit code.
pub fn run(args: Args) -> i32 {
    let (history, at) = match args.at.open() {
        Ok(x) => x,
        Err(c) => return c,
    };
    let settings = {
        let mut o = Settings::default();
        o.model = args.model.clone();
        o.temperature = args.temperature;
        o.max_tokens = args.max_tokens;
        o.structured = args.structured.into();
        o
    };
    let prompt = match history.prompt(Some(&at), args.character.as_deref(), &settings) {
        Ok(p) => p,
        Err(e) => return super::report(&e),
    };
    if args.at.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&prompt.body).unwrap_or_default()
        );
        return 0;
    }
    let mut out = String::new();
    for msg in &prompt.messages {
        out.push_str(&format!(
            "--- {} ---\n{}\n",
            msg.role,
            msg.content.trim_end()
        ));
    }
    match prompt.body.get("response_format") {
        Some(Value::Object(f)) => out.push_str(&format!(
            "--- response_format ---\n{}\n",
            serde_json::to_string_pretty(f).unwrap_or_default()
        )),
        _ => out.push_str("--- response_format ---\n(none: the schema is in the system message)\n"),
    }
    print!("{}", troupe::escape_controls(&out));
    0
}
