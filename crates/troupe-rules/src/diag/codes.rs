//! Every diagnostic code Troupe reports, one meaning each (Format 17.2,
//! `docs/validation.md`). Codes are stable: never rename one, only add.

use serde::Serialize;

use super::diagnostic::Severity;

macro_rules! codes {
    ($( $(#[doc = $doc:literal])* $name:ident => $text:literal, $sev:ident; )*) => {
        /// A stable diagnostic code. Its text form (`Code::as_str`) is what
        /// `--json` prints and what conformance cases compare.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[doc = $doc])* $name, )*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$name),*];

            /// The code as printed: `SCHEMA`, `UNKNOWN_FIELD`, ...
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$name => $text,)* }
            }

            /// The severity the code has unless a check says otherwise.
            pub fn default_severity(self) -> Severity {
                match self { $(Code::$name => Severity::$sev,)* }
            }

            /// Parses a code or one of its documented aliases
            /// (`SCHEMA_VALIDATION` → `SCHEMA`, `INVALID_YAML` → `PARSE`).
            pub fn parse(text: &str) -> Option<Code> {
                match text {
                    "SCHEMA_VALIDATION" => Some(Code::Schema),
                    "INVALID_YAML" => Some(Code::Parse),
                    $($text => Some(Code::$name),)*
                    _ => None,
                }
            }
        }
    };
}

codes! {
    /// Bytes that are not well-formed JSON, JSON Lines or YAML, a top level that is
    /// not an object, a duplicate key, a truncated line (alias `INVALID_YAML`). Format 2.
    Parse => "PARSE", Error;
    /// Bytes that are not valid UTF-8, or a byte order mark. Format 2.1.
    Encoding => "ENCODING", Error;
    /// A file, line, nesting depth, alias count or archive over a bound. Format 16.
    Limit => "LIMIT", Error;
    /// A value fails its JSON Schema (alias `SCHEMA_VALIDATION`). Format 2.2.
    Schema => "SCHEMA", Error;
    /// A property or part type the format does not define. Format 15.
    UnknownField => "UNKNOWN_FIELD", Error;
    /// A well-formed version this implementation does not support. Format 2.3.
    UnsupportedVersion => "UNSUPPORTED_VERSION", Error;
    /// A required file is missing or a file reference names no file. Format 13.
    MissingFile => "MISSING_FILE", Error;
    /// A script or executable by extension, or a symlink, in a pack or archive. Format 16.
    ForbiddenFile => "FORBIDDEN_FILE", Error;
    /// A file whose bytes are an executable format, whatever its name. Format 16.
    ForbiddenBinary => "FORBIDDEN_BINARY", Error;
    /// A path that leaves the pack or archive root, is absolute, or holds a NUL. Format 16.
    PathTraversal => "PATH_TRAVERSAL", Error;
    /// Two things that share a namespace share an ID. Format 3.
    DuplicateId => "DUPLICATE_ID", Error;
    /// A reference to an ID that does not exist. Format 3.
    UnknownRef => "UNKNOWN_REF", Error;
    /// Two state names that would be equal (a scenario variable named like a character). Format 8.
    NameClash => "NAME_CLASH", Error;
    /// A CEL expression that does not parse. Format 11.
    CelSyntax => "CEL_SYNTAX", Error;
    /// A CEL expression that does not type-check against its scenario. Format 11.2.
    CelType => "CEL_TYPE", Error;
    /// A macro template that does not parse. Format 10.
    TemplateSyntax => "TEMPLATE_SYNTAX", Error;
    /// Derived variables that depend on each other in a cycle. Format 8.1.
    DerivedCycle => "DERIVED_CYCLE", Error;
    /// A value of the wrong type for its variable, or a bound that cannot hold. Format 8.2.
    TypeMismatch => "TYPE_MISMATCH", Error;
    /// A change to a variable that is not declared in the story. Format 8.5.
    UnknownVariable => "UNKNOWN_VARIABLE", Error;
    /// A change to a derived variable. Format 8.5.
    DerivedSet => "DERIVED_SET", Error;
    /// A session line that breaks the order rules: a parent that is not an earlier line. Format 12.1.
    Order => "ORDER", Error;
    /// A once-only event recorded twice on one path. Format 9.
    RepeatedFiring => "REPEATED_FIRING", Error;
    /// A message recorded after its path has ended. Format 9.
    AfterEnd => "AFTER_END", Warning;
    /// A player, seat or cast assignment that does not fit the scenario. Format 12.3.
    Seat => "SEAT", Error;
    /// The safety policy's content_rating_cap is below the manifest's content_rating. Format 13.4.
    RatingCap => "RATING_CAP", Error;
    /// A package's compiled IR does not match its bundle, or has another IR version. Format 14.4.
    IrMismatch => "IR_MISMATCH", Warning;
    /// Replay: a recorded firing the rules do not produce, or a produced firing
    /// that is not recorded. Format 18.7.
    FiringMismatch => "FIRING_MISMATCH", Error;
    /// Replay: a turn's first reply whose recorded author or `chosen` is not
    /// what the turn order chooses there. Format 18.7, 18.9.
    SpeakerMismatch => "SPEAKER_MISMATCH", Error;
    /// A fixture's static assertion `path` or `check` that does not parse. Format 21.4.
    AssertionSyntax => "ASSERTION_SYNTAX", Error;
    /// A mid-session settings change (a message's `settings`, a fixture's
    /// settings step) that is not a settings object, or a knob value that is
    /// not a number within the decimal limits. Format 8.9.
    SettingsInvalid => "SETTINGS_INVALID", Error;
    /// A mid-session settings change for a scenario without difficulty, or
    /// naming a preset or knob its difficulty does not declare. Format 8.9.
    SettingsNotDeclared => "SETTINGS_NOT_DECLARED", Error;
    /// Playtest choreography that can never proceed. Format 22.7.
    Deadlock => "DEADLOCK", Error;
    /// A roster larger than the declared player limit, and other advice. Format 17.2.
    Advisory => "ADVISORY", Warning;
    /// A file that exists but could not be read for a reason other than its
    /// content (permission denied, a symlink loop, an I/O error); `troupe
    /// check` exits 3. Format 17.2.
    Io => "IO", Error;
    /// Logic that can never take effect: a rule hidden by a fallback tried
    /// before it, a threshold past its variable's bounds. A lint. Format 17.4.
    DeadLogic => "DEAD_LOGIC", Warning;
    /// A state-path macro that names no state of the story, so it is always
    /// shown as written (a typo such as `{{evidense}}`). A lint. Format 10.3,
    /// 17.4.
    UnknownMacro => "UNKNOWN_MACRO", Warning;
    /// A summary whose explicit `audience` lists an ID that does not know
    /// every part the summary covers: it reveals that part. Format 12.5.
    SummaryReveals => "SUMMARY_REVEALS", Warning;
    /// A failure inside Troupe itself, never caused by input that passed its
    /// checks (a conforming story that does not compile): a bug to report.
    /// Format 17.2.
    Internal => "INTERNAL", Error;
    /// The model's endpoint cannot be reached (connection refused, no such
    /// host). Exit 4. Format 24.6.
    ModelUnreachable => "MODEL_UNREACHABLE", Error;
    /// The model's endpoint did not answer within `--timeout`. Exit 4. Format 24.6.
    ModelTimeout => "MODEL_TIMEOUT", Error;
    /// The model's endpoint refused the credentials (401, 403). Exit 5. Format 24.6.
    ModelAuth => "MODEL_AUTH", Error;
    /// The model's endpoint answered 429 on every try. Exit 4. Format 24.6.
    ModelRateLimited => "MODEL_RATE_LIMITED", Error;
    /// The model's endpoint answered 5xx on every try. Exit 4. Format 24.6.
    ModelServerError => "MODEL_SERVER_ERROR", Error;
    /// The model's endpoint answered another status that is not success. Exit 4. Format 24.6.
    ModelHttp => "MODEL_HTTP", Error;
    /// The model's endpoint answered a body that is not a Chat Completions
    /// answer (not JSON, no message content). Exit 4. Format 24.6.
    ModelBadResponse => "MODEL_BAD_RESPONSE", Error;
    /// The model's answer was cut off at the token limit (`finish_reason:
    /// "length"`). Exit 4. Format 24.6.
    ModelTruncated => "MODEL_TRUNCATED", Error;
    /// A model's answer that failed validation twice (the repair request
    /// included): the proposal was dropped whole. Format 24.4.
    ModelAnswer => "MODEL_ANSWER", Warning;
    /// A model call that a cassette or a fixture's `mocks.model` does not
    /// hold. Exit 1. Format 24.5.
    UnmockedModelCall => "UNMOCKED_MODEL_CALL", Error;
    /// A cassette that cannot be read or written. Exit 3. Format 24.5.
    ModelCassette => "MODEL_CASSETTE", Error;
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
