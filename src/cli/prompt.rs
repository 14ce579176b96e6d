//! `troupe prompt PACK SESSION --at ID [--char C] [--json]` (Format 24.3):
//! prints exactly what the model runtime would send when C answers
//! message ID, so authors can inspect the prompt.

use serde_json::Value;

use super::run::StructuredArg;
use crate::compile::Who;
use crate::runtime::chat::{self, ModelDecl, Settings};

/// Arguments of `troupe prompt`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub at: super::SessionAt,
    /// Who answers (default: the responder of Format 18.4 at the message).
    #[arg(long = "char", value_name = "C")]
    pub character: Option<String>,
    /// The request's `model`.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub model: String,
    /// How the answer's shape is asked for (Format 24.4).
    #[arg(long, value_enum, default_value = "json_schema")]
    pub structured: StructuredArg,
    /// The request's `max_tokens`.
    #[arg(long, default_value_t = chat::DEFAULT_MAX_TOKENS)]
    pub max_tokens: u32,
    /// The request's `temperature`.
    #[arg(long)]
    pub temperature: Option<f64>,
}

/// Prints the request; returns the exit code.
pub fn run(args: Args) -> i32 {
    let pack = match super::run::open_pack(&args.at.bundle) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (history, at) = match args.at.open() {
        Ok(x) => x,
        Err(c) => return c,
    };
    let engine = history.engine_internal();
    let m = match super::message_index(engine, &at) {
        Ok(m) => m,
        Err(c) => return c,
    };
    let responder = match &args.character {
        Some(c) if c == "narrator" || engine.ir.cast_index(c).is_some() => c.clone(),
        Some(c) => {
            eprintln!(
                "scenario `{}` has no cast member `{c}`{}",
                engine.ir.scenario,
                troupe::suggest(c, engine.ir.cast.iter().map(|x| &*x.id))
            );
            return 1;
        }
        None => {
            let st = engine.state_at(m);
            let who = engine
                .ir
                .cast
                .iter()
                .enumerate()
                .find(|(i, c)| !c.player && st.present.get(*i).copied().unwrap_or(false))
                .map_or(Who::Narrator, |(i, _)| Who::Cast(i as u16));
            engine.ir.who_id(who).to_string()
        }
    };
    let structured = match args.structured {
        StructuredArg::JsonSchema => chat::Structured::JsonSchema,
        StructuredArg::JsonObject => chat::Structured::JsonObject,
        StructuredArg::None => chat::Structured::None,
    };
    let settings = Settings {
        model: args.model.clone(),
        temperature: args.temperature,
        max_tokens: args.max_tokens,
        structured,
    };
    let decl = ModelDecl::of(&engine.story.raw);
    let messages = chat::prompt::messages(&pack.bundle, engine, m, &responder, &decl, structured);
    let schema = chat::answer_schema(&engine.story, &decl);
    let body = chat::request_body(&settings, &messages, &schema, engine.session.seed);
    if args.at.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
        return 0;
    }
    let mut out = String::new();
    for msg in &messages {
        out.push_str(&format!(
            "--- {} ---\n{}\n",
            msg.role,
            msg.content.trim_end()
        ));
    }
    match body.get("response_format") {
        Some(Value::Object(f)) => out.push_str(&format!(
            "--- response_format ---\n{}\n",
            serde_json::to_string_pretty(f).unwrap_or_default()
        )),
        _ => out.push_str("--- response_format ---\n(none: the schema is in the system message)\n"),
    }
    print!("{}", troupe::escape_controls(&out));
    0
}
