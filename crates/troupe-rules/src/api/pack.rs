//! [`Pack`]: an opened, checked story, ready for sessions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::error::{Error, ErrorKind, Result};
use super::history::History;
use super::session::{ResumeOptions, Session, SessionOptions};
use crate::diag::render::Sources;
use crate::diag::{Code, Diagnostic};
use crate::runtime::OpenError;
use crate::runtime::{OpenOptions, Opened};

/// Where a [`Pack`] came from, so that [`Pack::compile`] can compile the
/// checked bundle afresh instead of trusting a package's `ir.json`.
#[derive(Debug)]
enum Origin {
    Path(PathBuf),
    Bundle,
    Package(Arc<[u8]>),
}

#[derive(Debug)]
struct Inner {
    opened: Opened,
    origin: Origin,
    /// [`OpenOptions::jobs`], which [`Pack::compile`] uses too.
    jobs: usize,
    /// Checkers of appended session lines ([`crate::Session::append_lines`])
    /// by scenario and seating, each with no line read: the sessions'
    /// checkers share their story.
    checkers:
        std::sync::Mutex<std::collections::HashMap<String, crate::check::session::SessionChecker>>,
}

/// A scenario a pack offers (Format 13, 14): its ID and its display name.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let info = &pack.scenarios()[0];
/// assert_eq!(info.name.as_deref(), Some("Negotiating a used car"));
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ScenarioInfo {
    /// The scenario's ID (what [`SessionOptions::scenario`] takes).
    pub id: String,
    /// The scenario's display name (a pack's `title`), if it has one.
    pub name: Option<String>,
    /// The scenario's description, if it has one.
    pub description: Option<String>,
}

/// An opened story: a pack directory, a bundle or a compiled package,
/// checked (Format 17) and ready to start sessions and read recorded ones.
///
/// `Pack` is `Send + Sync` and cheap to clone (the story is shared behind
/// an `Arc`): open it once and start any number of sessions, from any
/// thread.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let ids: Vec<_> = pack.scenarios().into_iter().map(|s| s.id).collect();
/// assert_eq!(ids, ["used_car_negotiation"]);
/// # Ok::<(), troupe::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Pack {
    inner: Arc<Inner>,
}

fn open_error(e: OpenError) -> Error {
    Error::invalid(e.diagnostics, e.sources)
}

impl Pack {
    /// Opens what `path` names (Format 20): a pack directory, a bundle file
    /// (`.json`, `.yaml`) or a package (`.troupe`). Sources are checked;
    /// a package whose compiled form matches (Format 14.4) is used without
    /// checking again.
    ///
    /// Errors: [`ErrorKind::NotFound`] when nothing is at `path`,
    /// [`ErrorKind::Invalid`] with the diagnostics when the input does not
    /// conform.
    pub fn open(path: impl AsRef<Path>) -> Result<Pack> {
        Pack::open_with(path, OpenOptions::default())
    }

    /// [`Pack::open`] with `options` (e.g. `verify_ir`, Format 14.4).
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let options = troupe::OpenOptions::default().verify_ir(true);
    /// let pack = troupe::Pack::open_with("examples/bundles/tiny.bundle.json", options)?;
    /// assert!(pack.warnings().is_empty());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Pack> {
        let path = path.as_ref();
        if std::fs::symlink_metadata(path).is_err() && !path.exists() {
            return Err(Error::with_diagnostics(
                ErrorKind::NotFound,
                "nothing to open",
                vec![Diagnostic::error(
                    Code::MissingFile,
                    format!("no such file or folder: {}", path.display()),
                )
                .in_file(path.display().to_string())],
                Sources::new(),
            ));
        }
        let opened = crate::par::with_jobs(options.jobs, || crate::open::open_with(path, options))
            .map_err(open_error)?;
        Ok(Pack::new(
            opened,
            Origin::Path(path.to_path_buf()),
            options.jobs,
        ))
    }

    /// A bundle given as text (Format 13: JSON, or YAML when the text does
    /// not start with `{`), checked as `troupe check` checks a bundle file.
    /// Diagnostics name the file `bundle`.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let text = std::fs::read_to_string("examples/bundles/tiny.bundle.json").unwrap();
    /// let pack = troupe::Pack::from_bundle(&text)?;
    /// assert_eq!(pack.scenarios().len(), 1);
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn from_bundle(text: &str) -> Result<Pack> {
        let json = text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('{');
        let loaded = if json {
            crate::load::parse_json("bundle", text.as_bytes())
        } else {
            crate::load::parse_yaml("bundle", text.as_bytes())
        };
        let mut sources = Sources::new();
        sources.add("bundle", Arc::from(text));
        let mut diagnostics = loaded.diagnostics;
        let Some(doc) = loaded.value else {
            return Err(Error::invalid(diagnostics, sources));
        };
        let parsed = Arc::new(crate::cel::parse::ParseCache::default());
        if !diagnostics.iter().any(Diagnostic::is_error) {
            diagnostics.extend(parsed.scope(|| crate::check::run::check_bundle_document(&doc)));
        }
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Err(Error::invalid(diagnostics, sources));
        }
        let mut opened = Opened::from_checked("bundle", doc.value);
        opened.warnings = diagnostics;
        opened.parsed = parsed;
        Ok(Pack::new(opened, Origin::Bundle, 0))
    }

    /// A compiled package held in memory (Format 14.4): its compiled form
    /// when every hash and version matches, else its `bundle.json` checked
    /// and compiled afresh (with an IR_MISMATCH warning). Diagnostics name
    /// the file `package`.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
    /// let bytes = pack.compile()?;
    /// let again = troupe::Pack::from_package(&bytes)?;
    /// assert_eq!(again.scenarios(), pack.scenarios());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn from_package(bytes: &[u8]) -> Result<Pack> {
        Pack::from_package_with(bytes, OpenOptions::default())
    }

    /// [`Pack::from_package`] with `options`.
    pub fn from_package_with(bytes: &[u8], options: OpenOptions) -> Result<Pack> {
        let opened = crate::par::with_jobs(options.jobs, || {
            crate::open::open_package_bytes("package", bytes, options)
        })
        .map_err(open_error)?;
        Ok(Pack::new(
            opened,
            Origin::Package(Arc::from(bytes)),
            options.jobs,
        ))
    }

    fn new(opened: Opened, origin: Origin, jobs: usize) -> Pack {
        Pack {
            inner: Arc::new(Inner {
                opened,
                origin,
                jobs,
                checkers: Default::default(),
            }),
        }
    }

    pub(crate) fn opened(&self) -> &Opened {
        &self.inner.opened
    }

    /// A checker, with no line read, of the messages of a session of this
    /// pack whose header (already checked) is `header`; `None` when its
    /// story does not resolve. The story is resolved once per scenario and
    /// seating (the header's `players` and `characters`) and shared.
    pub(crate) fn lines_checker(
        &self,
        header: &serde_json::Value,
    ) -> Option<crate::check::session::SessionChecker> {
        let scenario = crate::model::Header::read(header).scenario.unwrap_or("");
        let key = crate::model::seating_key(scenario, header);
        let mut cache = self.inner.checkers.lock().ok()?;
        if let Some(c) = cache.get(&key) {
            return Some(c.fresh());
        }
        let c =
            crate::check::session::SessionChecker::for_lines(&self.inner.opened.bundle, header)?;
        let fresh = c.fresh();
        cache.insert(key, c);
        Some(fresh)
    }

    /// The name the pack was opened under (the path as given, `bundle` or
    /// `package`).
    pub fn name(&self) -> &str {
        &self.inner.opened.name
    }

    /// The warnings of opening (IR_MISMATCH, ADVISORY, lints, …). Errors
    /// never appear here: a pack with errors does not open.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.inner.opened.warnings
    }

    /// True when a package's compiled form was used (no check ran).
    pub fn from_ir(&self) -> bool {
        self.inner.opened.from_ir
    }

    /// The scenarios, in bundle order.
    pub fn scenarios(&self) -> Vec<ScenarioInfo> {
        crate::model::scenarios(&self.inner.opened.bundle)
            .iter()
            .map(|s| {
                let s = crate::model::items::ScenarioHead::read(s);
                ScenarioInfo {
                    id: s.id.unwrap_or_default().to_string(),
                    name: s.name.map(str::to_string),
                    description: s.description.map(str::to_string),
                }
            })
            .collect()
    }

    /// The checked bundle as JSON (a pack's lowered bundle, Format 13.10).
    pub fn bundle(&self) -> &Value {
        &self.inner.opened.bundle
    }

    /// The bytes of the compiled package (Format 14.4), as `troupe compile`
    /// writes them: the same input gives the same bytes. A package is
    /// compiled from its checked `bundle.json`, never from its `ir.json`.
    pub fn compile(&self) -> Result<Vec<u8>> {
        crate::par::with_jobs(self.inner.jobs, || self.compile_here())
    }

    /// [`Pack::compile`] with the pack's [`OpenOptions::jobs`] in effect.
    fn compile_here(&self) -> Result<Vec<u8>> {
        let fresh = OpenOptions {
            use_ir: false,
            verify_ir: false,
            jobs: self.inner.jobs,
        };
        let reopened;
        let opened = match (&self.inner.origin, self.inner.opened.from_ir) {
            (Origin::Path(p), true) => {
                reopened = crate::open::open_with(p, fresh).map_err(open_error)?;
                &reopened
            }
            (Origin::Package(b), true) => {
                reopened =
                    crate::open::open_package_bytes("package", b, fresh).map_err(open_error)?;
                &reopened
            }
            _ => &self.inner.opened,
        };
        // The check's parses are reused: no expression is parsed twice.
        Ok(opened
            .parsed
            .scope(|| crate::pipeline::package::write_package(&opened.bundle, &opened.sessions))?)
    }

    /// Starts a session (Format 18.4) with `options`.
    ///
    /// Errors: [`ErrorKind::Refused`] with the diagnostics when the settings
    /// do not fit the pack (unknown scenario, preset or opening).
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::{Pack, SessionOptions};
    /// let pack = Pack::open("examples/packs/everyday-negotiation")?;
    /// let mut session = pack.start(SessionOptions::default().seed(7))?;
    /// let turn = session.turn("Hello Marco! What's your best price?")?;
    /// assert_eq!(turn.messages.len(), 2);
    /// let err = pack.start(SessionOptions::default().scenario("nope")).unwrap_err();
    /// assert_eq!(err.kind(), troupe::ErrorKind::Refused);
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn start(&self, options: SessionOptions) -> Result<Session> {
        Session::start(self, options)
    }

    /// Resumes the saved session `jsonl` (the text of its file, Format
    /// 18.8) at its last message in file order, under the rules runtime
    /// (Format 18.10): the settings, state, turn order and draws come from
    /// the file alone, and the session goes on as if it had never stopped.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// use troupe::{Pack, SessionOptions};
    /// let pack = Pack::open("examples/packs/everyday-negotiation")?;
    /// let mut whole = pack.start(SessionOptions::default().seed(7))?;
    /// whole.turn("Hello Marco!")?;
    /// let mut resumed = pack.resume(whole.jsonl())?;
    /// whole.turn("What's your best price?")?;
    /// resumed.turn("What's your best price?")?;
    /// assert_eq!(resumed.jsonl(), whole.jsonl());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    ///
    /// Errors: [`ErrorKind::Invalid`] with the diagnostics of `troupe
    /// check` when the session does not conform to the pack;
    /// [`ErrorKind::Refused`] (ORDER) when its message IDs are not `m1`,
    /// `m2`, … in file order.
    pub fn resume(&self, jsonl: &str) -> Result<Session> {
        Session::resume(self, jsonl, ResumeOptions::default())
    }

    /// [`Pack::resume`] at a message, under a runtime, or writing to a file
    /// ([`ResumeOptions`]). Resuming at an earlier message starts a branch
    /// there, as [`Session::go_to`] does.
    ///
    /// Errors: as [`Pack::resume`]; [`ErrorKind::Refused`] (UNKNOWN_REF at
    /// `at`) when `at` is not a message of the session, or under the fake
    /// runtime; [`ErrorKind::Io`] when `out` cannot be written.
    pub fn resume_with(&self, jsonl: &str, options: ResumeOptions) -> Result<Session> {
        Session::resume(self, jsonl, options)
    }

    /// A recorded session given as the text of its JSONL file (Format 12,
    /// 18.8), checked against this pack.
    ///
    /// Errors: [`ErrorKind::Invalid`] with the diagnostics when the session
    /// does not conform.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// let text = std::fs::read_to_string("examples/packs/harbor-lights/sessions/inn.jsonl").unwrap();
    /// let history = pack.history(&text)?;
    /// assert_eq!(history.state_at("m3")?["trust.ines"], 50);
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn history(&self, jsonl: &str) -> Result<History> {
        History::parse(self, "session", jsonl.as_bytes())
    }

    /// A recorded session read from the file at `path` (Format 12; read as
    /// `troupe check` reads session files: bounded, regular files only),
    /// checked against this pack.
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/bundles/harbor-lights.bundle.json")?;
    /// let history = pack.history_file("examples/bundles/sessions/harbor-lights.walkthrough.jsonl")?;
    /// assert!(!history.message_ids().is_empty());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn history_file(&self, path: impl AsRef<Path>) -> Result<History> {
        History::check(
            self,
            crate::load::read_session(path.as_ref()),
            Sources::new(),
        )
    }

    /// The names of the recorded sessions the pack carries (a pack's
    /// `sessions/*.jsonl`, a package's `sessions/` entries), in code point
    /// order.
    pub fn recorded(&self) -> Vec<&str> {
        self.inner
            .opened
            .sessions
            .iter()
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The recorded session `name` (one of [`Pack::recorded`]) as a
    /// [`History`].
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// assert_eq!(pack.recorded(), ["inn.jsonl", "keeper.jsonl", "walkthrough.jsonl"]);
    /// let history = pack.recorded_history("inn.jsonl")?;
    /// assert!(history.message_ids().contains(&"m3"));
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn recorded_history(&self, name: &str) -> Result<History> {
        let Some((n, bytes)) = self.inner.opened.sessions.iter().find(|(n, _)| n == name) else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the pack has no recorded session `{name}`{}",
                    crate::diag::suggest::one_of(
                        name,
                        self.inner.opened.sessions.iter().map(|(n, _)| n.as_str())
                    )
                ),
            ));
        };
        History::parse(self, &format!("{}!sessions/{n}", self.name()), bytes)
    }
    /// The diagnostics `troupe check` reports for session text `jsonl`
    /// (Format 12, 17) against this pack, named `file` in them: empty when
    /// it conforms. A program writing a session file checks it with this
    /// before committing it (Format 16.5).
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// let text = std::fs::read_to_string("examples/packs/harbor-lights/sessions/inn.jsonl").unwrap();
    /// assert!(pack.check_session("inn.jsonl", &text).is_empty());
    /// assert!(!pack.check_session("x.jsonl", "{").is_empty());
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn check_session(&self, file: &str, jsonl: &str) -> Vec<Diagnostic> {
        let loaded = crate::load::parse_session(file, jsonl.as_bytes());
        let mut diags = loaded.diagnostics;
        if let Some(doc) = &loaded.value {
            diags.extend(crate::check::run::check_session_document(
                &self.opened().bundle,
                doc,
            ));
        }
        diags
    }

    /// A [`History`] with no messages: the initial state of scenario
    /// `scenario` (`None`: the first), for rendering templates or reading
    /// the state before any session (`troupe render` without `--session`).
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
    /// let initial = pack.initial(None)?;
    /// assert_eq!(initial.state(None)?.turn, 0);
    /// # Ok::<(), troupe::Error>(())
    /// ```
    pub fn initial(&self, scenario: Option<&str>) -> Result<History> {
        if let Some(id) = scenario
            && !self.scenarios().iter().any(|s| s.id == id)
        {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("the pack has no scenario `{id}`"),
            ));
        }
        crate::pipeline::compile_checked(self.bundle(), None, scenario)
            .map(History::from_engine)
            .map_err(|d| Error::invalid(d, Sources::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiling an opened pack, or a bundle given as text, and starting a
    /// session from it parse no expression the check did not (issue 11,
    /// performance round 5): the check's cache holds every text.
    #[test]
    fn compile_and_start_reuse_the_checks_parses() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let pack = Pack::open(root.join("examples/packs/everyday-negotiation")).unwrap();
        let from_text = Pack::from_bundle(
            &std::fs::read_to_string(root.join("examples/bundles/tiny.bundle.json")).unwrap(),
        )
        .unwrap();
        for pack in [pack, from_text] {
            let parsed = &pack.opened().parsed;
            let after_check = parsed.len();
            assert!(after_check > 0, "the check parsed through the cache");
            pack.compile().unwrap();
            pack.start(SessionOptions::default()).unwrap();
            assert_eq!(parsed.len(), after_check, "nothing new was parsed");
        }
    }

    /// Checking a pack, compiling it and starting a session parse each
    /// CEL expression once (issue 41 item 2), counted by the debug
    /// builds' parse counter: as many parses as distinct expression texts,
    /// every one of them through the pack's cache. Both examples (events,
    /// outcomes, rules, derived variables, thresholds lowered to
    /// conditions, entry conditions), and a bundle given as text.
    #[test]
    fn check_compile_and_start_parse_each_expression_once() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let count = || crate::cel::parse::PARSES.get();
        let packs: [Box<dyn Fn() -> Pack>; 3] = [
            Box::new(|| Pack::open(root.join("examples/packs/everyday-negotiation")).unwrap()),
            Box::new(|| Pack::open(root.join("examples/packs/harbor-lights")).unwrap()),
            Box::new(|| {
                let text = std::fs::read_to_string(root.join("examples/bundles/tiny.bundle.json"))
                    .unwrap();
                Pack::from_bundle(&text).unwrap()
            }),
        ];
        for open in packs {
            let before = count();
            let pack = open();
            pack.compile().unwrap();
            pack.start(SessionOptions::default()).unwrap();
            let parsed = count() - before;
            let texts = pack.opened().parsed.len() as u64;
            assert!(texts > 0, "{}", pack.name());
            assert_eq!(parsed, texts, "{}: one parse per expression", pack.name());
        }
    }

    /// Checking a pack, compiling it, starting a session and playing it
    /// parse each template once (issue 41 item 2, "templates likewise"),
    /// counted by the debug builds' template parse counter. The bundle's
    /// texts holding a macro, by hand: the opening "Welcome in, {{user}}!
    /// Tea?", "{{char}} pours a cup for {{user}}." (a reply of two rules)
    /// and "Another cup, {{user}}?": 3 distinct texts. Plain texts (the
    /// descriptions, "Hello there.") are one text node and parse nothing.
    /// The check parses the three; the compile (the opening's template) and
    /// the turns (every reply rendered) parse nothing again.
    #[test]
    fn check_compile_and_play_parse_each_template_once() {
        let text = r#"{"troupe": "0.1", "kind": "bundle",
          "characters": [{"id": "pip", "name": "Pip", "fictional": true,
            "age_band": "adult", "description": "Owner of a tea shop."}],
          "scenarios": [{"id": "tea", "name": "Tea", "description": "A visit.",
            "cast": [{"character": "pip"}, {"seat": "guest", "player": true}],
            "openings": [{"id": "hello", "text": "Welcome in, {{user}}! Tea?"}],
            "variables": [{"id": "cups", "type": "int", "default": 0,
              "min": 0, "max": 9, "description": "Cups poured."}],
            "rules": [
              {"id": "pour", "keywords": ["tea"],
               "changes": [{"add": {"cups": 1}}],
               "replies": ["{{char}} pours a cup for {{user}}.", "Another cup, {{user}}?"]},
              {"id": "biscuit", "keywords": ["biscuit"],
               "replies": ["{{char}} pours a cup for {{user}}."]},
              {"id": "hello", "keywords": ["hello"], "replies": ["Hello there."]}
            ]}]}"#;
        let count = || crate::template::PARSES.get();
        let before = count();
        let pack = Pack::from_bundle(text).unwrap();
        assert_eq!(count() - before, 3, "the check parses each macro text once");
        pack.compile().unwrap();
        let mut session = pack.start(SessionOptions::default()).unwrap();
        let mut replies = Vec::new();
        for line in [
            "tea please",
            "a biscuit?",
            "more tea",
            "tea",
            "hello",
            "tea",
        ] {
            replies.extend(session.turn(line).unwrap().reply);
        }
        assert_eq!(replies.len(), 6);
        assert!(
            replies.iter().any(|r| r == "Pip pours a cup for Player."),
            "{replies:?}"
        );
        assert!(replies.iter().all(|r| !r.contains("{{")), "{replies:?}");
        assert_eq!(count() - before, 3, "compile and turns parse nothing again");
    }

    /// A pack compiles each scenario's story once, whatever its form,
    /// however many sessions start from it and with whatever seed or
    /// preset (issue 41 item 4): a source pack on its first start, a
    /// package never (its `ir.json` is the compilation). Starting a session
    /// with header players of its own still compiles for that header.
    #[test]
    fn a_pack_compiles_its_story_once_for_every_start() {
        let compiles = || crate::compile::STORY_COMPILES.with(std::cell::Cell::get);
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let source = Pack::open(root.join("examples/packs/everyday-negotiation")).unwrap();
        let text = Pack::from_bundle(
            &std::fs::read_to_string(root.join("examples/bundles/tiny.bundle.json")).unwrap(),
        )
        .unwrap();
        let package = Pack::from_package(&source.compile().unwrap()).unwrap();
        assert!(package.from_ir());
        for (pack, expected) in [(&source, 1), (&text, 1), (&package, 0)] {
            let before = compiles();
            for seed in 0..100 {
                let options = SessionOptions::default().seed(seed);
                let options = if seed % 2 == 0 && pack.name() != "bundle" {
                    options.difficulty("hard")
                } else {
                    options
                };
                pack.start(options).unwrap();
            }
            assert_eq!(compiles() - before, expected, "{}", pack.name());
        }
    }

    /// What a pack keeps of its compiled scenarios is bounded by its
    /// scenarios: a start that names no scenario of the pack is refused
    /// and leaves nothing behind (a service passing players' choices on).
    #[test]
    fn unknown_scenarios_leave_nothing_behind() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let source = Pack::open(root.join("examples/packs/everyday-negotiation")).unwrap();
        let package = Pack::from_package(&source.compile().unwrap()).unwrap();
        for pack in [source, package] {
            for i in 0..50 {
                let options = SessionOptions::default().scenario(format!("nope_{i}"));
                assert!(pack.start(options).is_err());
            }
            pack.start(SessionOptions::default()).unwrap();
            let kept = pack.opened().compiled.lock().unwrap().len();
            assert_eq!(kept, 1, "{}", pack.name());
        }
    }
}
