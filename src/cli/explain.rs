//! `troupe explain BUNDLE SESSION --at ID [--json]`: which lore entries are
//! active at a message and why, and which are not and why (Format 5.3).

use std::fmt::Write as _;

use troupe::lore::{EntryActivation, KeyHit, When, Why};
use troupe::Explanation;

/// Arguments of `troupe explain`.
pub type Args = super::SessionAt;

/// Prints the entries at `--at`: active ones by `order`, then the others.
pub fn run(args: Args) -> i32 {
    let (history, at) = match args.open() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let explanation = match history.explain(&at) {
        Ok(x) => x,
        Err(e) => return super::report(&e),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&explanation).unwrap_or_default()
        );
    } else {
        print!("{}", troupe::escape_controls(&human(&explanation)));
    }
    0
}

/// The plain-text explanation.
pub fn human(x: &Explanation) -> String {
    let mut out = String::new();
    let entries = &x.entries;
    let active = x.active;
    let _ = writeln!(
        out,
        "lore at message {} (scenario {}): {active} of {} entries active",
        x.at,
        x.scenario,
        entries.len()
    );
    if let Some(w) = &x.written_from {
        let _ = writeln!(
            out,
            "(message {} is a reply, written from the lore active at the input {}: {} of {} entries; `--at {}` for why)",
            x.at,
            w.at,
            w.active,
            entries.len(),
            w.at
        );
    }
    if entries.is_empty() {
        return out;
    }
    let _ = writeln!(out, "active, in order:");
    if active == 0 {
        let _ = writeln!(out, "  (none)");
    }
    let mut header = false;
    for e in entries {
        if !e.active && !header {
            let _ = writeln!(out, "not active:");
            header = true;
        }
        let _ = writeln!(
            out,
            "  {} ({}, order {}): {}",
            e.id,
            e.owner,
            e.order,
            why(e)
        );
    }
    out
}

fn hit(h: &KeyHit) -> String {
    let place = match &h.entry {
        Some(e) => format!("the content of entry {e} (recursion buffer)"),
        None => h.message.clone(),
    };
    format!(
        "`{}` matched {:?} in {} at characters {}..{}",
        h.key, h.text, place, h.start, h.end
    )
}

fn list(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn why(e: &EntryActivation) -> String {
    let mut parts: Vec<String> = Vec::new();
    match e.why {
        Why::Disabled => return "disabled (`enabled: false`)".into(),
        Why::Sticky => return "held by `sticky` (Format 5.6)".into(),
        Why::Delayed => return "delayed: the path is shorter than `delay` (5.6)".into(),
        Why::Cooldown => return "cooling down after its last start (5.6)".into(),
        Why::DelayedUntilRecursion => {
            return "waits for a recursion step (`delay_until_recursion`, 5.7)".into()
        }
        Why::NoKeys => return "never active: neither `constant` nor `keys`".into(),
        Why::Constant => parts.push("constant".into()),
        Why::NoKeyHit => parts.push(format!(
            "no key hit ({} not in {})",
            list(&e.missed),
            scanned(e)
        )),
        _ => {
            let hits: Vec<String> = e.hits.iter().map(hit).collect();
            parts.push(format!("key {}", hits.join("; ")));
        }
    }
    if let Some(s) = &e.secondary {
        let mut t = format!(
            "secondary {} {}",
            s.logic.name(),
            if s.held { "held" } else { "did not hold" }
        );
        let hits: Vec<String> = s.hits.iter().map(hit).collect();
        if !hits.is_empty() {
            let _ = write!(t, " (hit: {})", hits.join("; "));
        }
        if !s.missed.is_empty() {
            let _ = write!(t, " (missed: {})", list(&s.missed));
        }
        parts.push(t);
    }
    match &e.when {
        When::Absent | When::NotEvaluated => {}
        When::Held => parts.push("`when` held".into()),
        When::False => parts.push("`when` was false".into()),
        When::Error(m) => parts.push(format!("`when` failed (counts as false): {m}")),
        _ => {}
    }
    if let Some(step) = e.step.filter(|s| *s > 0) {
        parts.push(format!("at recursion step {step} (5.7)"));
    }
    if let Some(g) = &e.group {
        parts.push(format!("removed by inclusion group `{g}` (5.8)"));
    }
    parts.join("; ")
}

fn scanned(e: &EntryActivation) -> String {
    if e.scanned.is_empty() {
        "any scanned message (none: all hidden)".into()
    } else {
        format!("scanned {}", e.scanned.join(", "))
    }
}
