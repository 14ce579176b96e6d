//! "Did you mean" hints for names that are not known: the closest known
//! name by edit distance (`strsim`), when it is close enough to be a typo.

/// The known name closest to `name`, if one is within a typo's distance:
/// an edit distance (transpositions count one) of at most a third of the
/// longer name (at least 1), or
/// the same name after an owner prefix (`patience` → `vendor.patience`).
/// Ties keep the first candidate, so the hint is deterministic.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        if c.rsplit_once('.').is_some_and(|(_, last)| last == name) || plural_of(name, c) {
            return Some(c);
        }
        let d = strsim::osa_distance(name, c);
        let limit = (name.chars().count().max(c.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// True when one name is the English plural of the other (`reply` and
/// `replies`, `event` and `events`): a common slip that edit distance
/// alone misses for short names.
fn plural_of(a: &str, b: &str) -> bool {
    let one = |s: &str, p: &str| {
        p.strip_suffix('s') == Some(s)
            || s.strip_suffix('y')
                .is_some_and(|stem| p.strip_suffix("ies") == Some(stem))
    };
    a.len() >= 3 && b.len() >= 3 && (one(a, b) || one(b, a))
}

/// `"; did you mean `x`?"` for the closest candidate, or `""`.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// For a name that must be one of a few `choices` (a preset, a scenario, an
/// opening): the closest one as a "did you mean", else the list of choices
/// (at most ten), else `""` when there are none.
pub fn one_of<'a>(name: &str, choices: impl IntoIterator<Item = &'a str>) -> String {
    let choices: Vec<&str> = choices.into_iter().collect();
    if let Some(c) = closest(name, choices.iter().copied()) {
        return format!("; did you mean `{c}`?");
    }
    match choices.len() {
        0 => String::new(),
        n => {
            let shown: Vec<String> = choices.iter().take(10).map(|c| format!("`{c}`")).collect();
            let more = if n > 10 { ", …" } else { "" };
            format!(" (the choices are {}{more})", shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_and_owner_prefixes() {
        let names = ["warmth", "patience", "vendor.patience", "trust"];
        assert_eq!(closest("warmt", names), Some("warmth"));
        assert_eq!(closest("patiense", names), Some("patience"));
        assert_eq!(closest("xyz", names), None);
        assert_eq!(closest("titel", ["title", "description"]), Some("title"));
        assert_eq!(closest("mood", ["vendor.mood"]), Some("vendor.mood"));
        assert_eq!(
            did_you_mean("treshold", ["threshold", "variable"]),
            "; did you mean `threshold`?"
        );
        assert_eq!(did_you_mean("zzz", ["threshold"]), "");
        assert_eq!(closest("reply", ["keywords", "replies"]), Some("replies"));
        assert_eq!(closest("events", ["event", "outcomes"]), Some("event"));
        assert_eq!(one_of("Hard", ["warm", "hard"]), "; did you mean `hard`?");
        assert_eq!(
            one_of("x", ["warm", "hard"]),
            " (the choices are `warm`, `hard`)"
        );
    }
}
