//! `troupe._troupe`: the Python binding of Troupe's embedding API
//! (docs/python.md). Every call goes through the items the `troupe` crate
//! re-exports at its root (`troupe::Pack`, `Session`, `History`, `Error`,
//! `Runtime`, the tools); nothing reaches into the engine.
//!
//! Values cross the boundary as JSON: what the API serializes (a turn
//! result, a state view, a diagnostic) becomes plain Python dicts, lists,
//! strings, ints, floats, bools and `None`, with the keys and order of the
//! CLI's `--json` documents.
//!
//! Errors are one exception, `troupe.TroupeError`, with `.kind` and
//! `.diagnostics`. Long calls (opening, checking, testing, compiling,
//! replaying, a turn) release the GIL.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use serde_json::{Map, Number, Value};

pyo3::create_exception!(
    troupe,
    TroupeError,
    PyException,
    "The one error of Troupe.\n\n\
     Attributes:\n\
     - kind: 'invalid', 'refused', 'ended', 'not_found', 'io', 'unsupported',\n\
       'limit', 'runtime', 'evaluation', 'internal' or 'hook' (the Python\n\
       runtime callable raised or returned\n\
       something that is not a proposal);\n\
     - diagnostics: list of dicts with code, severity, file, pointer, line,\n\
       column, message (and help when there is advice), as `troupe check --json`\n\
       prints them; empty when the input was not at fault."
);

/// How deep a Python value given to Troupe may nest (a self-referencing
/// list would otherwise recurse without end).
const MAX_DEPTH: usize = 256;

// ---------------------------------------------------------------- values

/// A JSON value as a Python object: objects become dicts (in order), arrays
/// lists, numbers ints (any size) or floats.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_bound_py_any(py)?
            } else if let Some(u) = n.as_u64() {
                u.into_bound_py_any(py)?
            } else {
                let text = n.to_string();
                if text.contains(['.', 'e', 'E']) {
                    n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?
                } else {
                    // An integer beyond 64 bits (arbitrary precision).
                    py.get_type::<PyInt>().call1((text,))?
                }
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// Anything serializable as a Python object, through its JSON form.
fn ser_to_py<'py>(py: Python<'py>, v: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(v)
        .map_err(|e| troupe_error(py, "io", &format!("cannot convert a result: {e}"), &[]))?;
    to_py(py, &json)
}

/// A Python value as JSON: None, bool, int, float (finite), str, list or
/// tuple, dict with str keys. Anything else is an error naming `what`.
fn to_json(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("{what} nests deeper than {MAX_DEPTH} levels"));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        let text = obj.str().map_err(|e| e.to_string())?.to_string();
        return text
            .parse::<Number>()
            .map(Value::Number)
            .map_err(|e| format!("{what}: {e}"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| format!("{what} is not a finite number"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(
            s.to_cow().map_err(|e| e.to_string())?.into_owned(),
        ));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|x| to_json(&x, what, depth + 1))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| to_json(&x, what, depth + 1))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, x) in d.iter() {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(format!("{what} has a key that is not a str"));
            };
            let k = k.to_cow().map_err(|e| e.to_string())?.into_owned();
            m.insert(k, to_json(&x, what, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    let ty = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    Err(format!(
        "{what} holds a {ty}, which is not JSON (None, bool, int, float, str, list, dict)"
    ))
}

// ---------------------------------------------------------------- errors

/// A diagnostic as a dict with every key of the brief (code, severity,
/// file, pointer, line, column, message), absent ones `None`.
fn diagnostic_to_py<'py>(py: Python<'py>, d: &troupe::Diagnostic) -> PyResult<Bound<'py, PyAny>> {
    let mut json = serde_json::to_value(d).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut json {
        let mut full = Map::new();
        for key in [
            "code", "severity", "file", "pointer", "line", "column", "message",
        ] {
            full.insert(key.into(), m.remove(key).unwrap_or(Value::Null));
        }
        full.extend(std::mem::take(m));
        json = Value::Object(full);
    }
    to_py(py, &json)
}

fn diagnostics_to_py<'py>(
    py: Python<'py>,
    ds: &[troupe::Diagnostic],
) -> PyResult<Bound<'py, PyList>> {
    let items = ds
        .iter()
        .map(|d| diagnostic_to_py(py, d))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// A `TroupeError` with `kind`, `message` and `diagnostics`.
fn troupe_error(py: Python<'_>, kind: &str, message: &str, ds: &[troupe::Diagnostic]) -> PyErr {
    let err = TroupeError::new_err(message.to_string());
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("kind", kind)?;
        value.setattr("diagnostics", diagnostics_to_py(py, ds)?)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

fn api_error(py: Python<'_>, e: troupe::Error) -> PyErr {
    troupe_error(py, e.kind().as_str(), &e.to_string(), e.diagnostics())
}

/// `?` for the API's results.
trait OrRaise<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for troupe::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| api_error(py, e))
    }
}

// ------------------------------------------------------------------ Pack

/// An opened, checked story: a pack directory, a bundle or a compiled
/// package (Format 13, 14, 17). Immutable and shared: open once, start any
/// number of sessions from any thread. Pickles as its compiled package.
#[pyclass(frozen, module = "troupe")]
struct Pack {
    inner: troupe::Pack,
}

#[pymethods]
impl Pack {
    /// Opens what `path` names: a pack directory, a bundle file (.json,
    /// .yaml) or a package (.troupe), checking sources (Format 17).
    ///
    /// Raises TroupeError (kind 'not_found' when nothing is there,
    /// 'invalid' with the diagnostics when it does not conform).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Pack> {
        let inner = py.detach(|| troupe::Pack::open(&path)).or_raise(py)?;
        Ok(Pack { inner })
    }

    /// A bundle given as text (JSON, or YAML when it does not start with
    /// '{'), checked as `troupe check` checks a bundle file; diagnostics
    /// name the file 'bundle'.
    #[staticmethod]
    fn from_bundle(py: Python<'_>, text: String) -> PyResult<Pack> {
        let inner = py
            .detach(|| troupe::Pack::from_bundle(&text))
            .or_raise(py)?;
        Ok(Pack { inner })
    }

    /// A compiled package held in memory (the bytes of a .troupe file or of
    /// `Pack.compile()`); diagnostics name the file 'package'.
    #[staticmethod]
    fn from_package(py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<Pack> {
        let bytes = data.as_bytes();
        let inner = py
            .detach(|| troupe::Pack::from_package(bytes))
            .or_raise(py)?;
        Ok(Pack { inner })
    }

    /// The name the pack was opened under (the path as given, 'bundle' or
    /// 'package').
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The scenarios in bundle order: dicts with id, name, description.
    #[getter]
    fn scenarios<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.inner.scenarios())
    }

    /// The warnings of opening (lints, ADVISORY, IR_MISMATCH …) as dicts
    /// with code, severity, file, pointer, line, column, message. Errors
    /// never appear here: a pack with errors raises instead.
    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        diagnostics_to_py(py, self.inner.warnings())
    }

    /// True when a package's compiled form was used (no check ran).
    #[getter]
    #[allow(clippy::wrong_self_convention)] // the API's name (`troupe::Pack::from_ir`)
    fn from_ir(&self) -> bool {
        self.inner.from_ir()
    }

    /// The names of the recorded sessions the pack carries (sessions/*.jsonl).
    #[getter]
    fn recorded(&self) -> Vec<String> {
        self.inner
            .recorded()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The checked bundle as a dict (a pack's lowered bundle, Format 13.10).
    #[getter]
    fn bundle<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, self.inner.bundle())
    }

    /// The bytes of the compiled package (Format 14.4), as `troupe compile`
    /// writes them: the same pack gives the same bytes.
    fn compile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.inner.compile()).or_raise(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Starts a session (Format 18.4).
    ///
    /// scenario: a scenario ID (None: the first); seed: the generator seed;
    /// difficulty: a preset; opening: an opening ID; players/characters:
    /// the header's players and characters (lists of dicts, Format 12.2);
    /// player_name: the default players' name ({{user}}); runtime: 'rules'
    /// (None), 'fake', or a callable model hook (see docs/python.md);
    /// out: also write the session file at this path as it grows.
    ///
    /// Raises TroupeError (kind 'refused') when the settings do not fit.
    #[pyo3(signature = (scenario=None, seed=0, difficulty=None, opening=None, players=None,
        characters=None, player_name=None, runtime=None, out=None))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        scenario: Option<String>,
        seed: u64,
        difficulty: Option<String>,
        opening: Option<String>,
        players: Option<&Bound<'_, PyAny>>,
        characters: Option<&Bound<'_, PyAny>>,
        player_name: Option<String>,
        runtime: Option<&Bound<'_, PyAny>>,
        out: Option<PathBuf>,
    ) -> PyResult<Session> {
        let bad = |e: String| troupe_error(py, "invalid", &e, &[]);
        let players = players
            .filter(|p| !p.is_none())
            .map(|p| to_json(p, "players", 0))
            .transpose()
            .map_err(bad)?;
        let characters = characters
            .filter(|p| !p.is_none())
            .map(|p| to_json(p, "characters", 0))
            .transpose()
            .map_err(bad)?;
        let hook_error = Arc::new(Mutex::new(None));
        let choice = runtime_choice(py, runtime, &hook_error)?;
        let mut options = {
            let mut o = troupe::SessionOptions::default();
            o.scenario = scenario;
            o.seed = seed;
            o.difficulty = difficulty;
            o.opening = opening;
            o.players = players;
            o.characters = characters;
            o.player_name = player_name;
            o.runtime = choice;
            o.out = out;
            o
        };
        if options.players.is_none() {
            options.characters = None;
        }
        let session = py
            .detach(|| self.inner.start(options))
            .map_err(|e| hook_error_or(py, &hook_error, e))?;
        Ok(Session {
            pack: self.inner.clone(),
            inner: Mutex::new(session),
            hook_error,
        })
    }

    /// Resumes a saved session given as the text of its JSONL file
    /// (Format 18.10): settings, state, turn order and draws come from the
    /// file alone, and the session goes on with the same bytes as the
    /// uninterrupted one. `at`: the resume point (None: the last message in
    /// file order; an earlier message starts a branch there); `runtime`:
    /// as in start() ('fake' is refused); `out`: also write the session
    /// file at this path, the resumed lines first.
    ///
    /// Raises TroupeError: kind 'invalid' with the diagnostics when the
    /// session does not conform to the pack; 'refused' when its message IDs
    /// are not m1, m2, … in file order, when `at` is not one of its
    /// messages, or under the fake runtime; 'io' when `out` cannot be
    /// written.
    #[pyo3(signature = (jsonl, at=None, runtime=None, out=None))]
    fn resume(
        &self,
        py: Python<'_>,
        jsonl: String,
        at: Option<String>,
        runtime: Option<&Bound<'_, PyAny>>,
        out: Option<PathBuf>,
    ) -> PyResult<Session> {
        let hook_error = Arc::new(Mutex::new(None));
        let options = {
            let mut o = troupe::ResumeOptions::default();
            o.at = at;
            o.runtime = runtime_choice(py, runtime, &hook_error)?;
            o.out = out;
            o
        };
        let session = py
            .detach(|| self.inner.resume_with(&jsonl, options))
            .map_err(|e| hook_error_or(py, &hook_error, e))?;
        Ok(Session {
            pack: self.inner.clone(),
            inner: Mutex::new(session),
            hook_error,
        })
    }

    /// A recorded session given as the text of its JSONL file (Format 12),
    /// checked against this pack. Raises TroupeError ('invalid').
    fn history(&self, py: Python<'_>, jsonl: String) -> PyResult<History> {
        let inner = py.detach(|| self.inner.history(&jsonl)).or_raise(py)?;
        Ok(History { inner })
    }

    /// A recorded session read from the file at `path`, checked against
    /// this pack.
    fn history_file(&self, py: Python<'_>, path: PathBuf) -> PyResult<History> {
        let inner = py.detach(|| self.inner.history_file(&path)).or_raise(py)?;
        Ok(History { inner })
    }

    /// The recorded session `name` (one of `recorded`) as a History.
    fn recorded_history(&self, py: Python<'_>, name: String) -> PyResult<History> {
        let inner = py
            .detach(|| self.inner.recorded_history(&name))
            .or_raise(py)?;
        Ok(History { inner })
    }

    /// A History with no messages: the initial state of `scenario` (None:
    /// the first), for rendering templates before any session.
    #[pyo3(signature = (scenario=None))]
    fn initial(&self, py: Python<'_>, scenario: Option<String>) -> PyResult<History> {
        let inner = py
            .detach(|| self.inner.initial(scenario.as_deref()))
            .or_raise(py)?;
        Ok(History { inner })
    }

    /// Pickles as `troupe._from_package(self.compile())`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rebuild = py.import("troupe")?.getattr("_from_package")?;
        let bytes = self.compile(py)?;
        PyTuple::new(
            py,
            [rebuild.into_any(), PyTuple::new(py, [bytes])?.into_any()],
        )
    }

    fn __repr__(&self) -> String {
        format!("<troupe.Pack {:?}>", self.inner.name())
    }
}

/// The runtime a session proposes with (Format 18.7): None or 'rules',
/// 'fake', or a callable model hook whose errors wait in `hook_error`.
fn runtime_choice(
    py: Python<'_>,
    runtime: Option<&Bound<'_, PyAny>>,
    hook_error: &Arc<Mutex<Option<PyErr>>>,
) -> PyResult<troupe::RuntimeChoice> {
    Ok(match runtime {
        None => troupe::RuntimeChoice::Rules,
        Some(r) if r.is_none() => troupe::RuntimeChoice::Rules,
        Some(r) if r.cast::<PyString>().is_ok() => match r.extract::<String>()?.as_str() {
            "rules" => troupe::RuntimeChoice::Rules,
            "fake" => troupe::RuntimeChoice::Fake,
            other => {
                return Err(troupe_error(
                    py,
                    "refused",
                    &format!("runtime `{other}` is not one of: rules, fake, or a callable"),
                    &[],
                ))
            }
        },
        Some(r) if r.is_callable() => troupe::RuntimeChoice::Adapter(Box::new(PyRuntime {
            callable: r.clone().unbind(),
            error: hook_error.clone(),
        })),
        Some(r) => {
            let ty = r.get_type().name()?.to_string();
            return Err(troupe_error(
                py,
                "refused",
                &format!("runtime must be 'rules', 'fake' or a callable, not a {ty}"),
                &[],
            ));
        }
    })
}

/// A hook's error, when one is waiting, else the API's error.
fn hook_error_or(py: Python<'_>, slot: &Mutex<Option<PyErr>>, e: troupe::Error) -> PyErr {
    match take_hook_error(slot) {
        Some(err) => err,
        None => api_error(py, e),
    }
}

fn take_hook_error(slot: &Mutex<Option<PyErr>>) -> Option<PyErr> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).take()
}

// ---------------------------------------------------------------- Session

/// A session being played (Format 18). Safe to use from several threads
/// (one turn at a time: calls on one session wait for each other; turns
/// release the GIL so different sessions step in parallel).
#[pyclass(frozen, module = "troupe")]
struct Session {
    pack: troupe::Pack,
    inner: Mutex<troupe::Session>,
    hook_error: Arc<Mutex<Option<PyErr>>>,
}

thread_local! {
    /// The sessions (by address) in a turn on this thread: a runtime
    /// callable that calls back into its own session is refused instead of
    /// waiting for itself forever.
    static TURNING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

impl Session {
    fn key(&self) -> usize {
        self as *const Session as usize
    }

    /// Runs `f` on the session, waiting for it (another thread's turn)
    /// with the GIL released, so that a runtime callable running in that
    /// turn can always take the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut troupe::Session) -> T + Send,
    ) -> PyResult<T> {
        if TURNING.with(|t| t.borrow().contains(&self.key())) {
            return Err(troupe_error(
                py,
                "refused",
                "the session is in a turn: its runtime callable cannot use the session itself",
                &[],
            ));
        }
        Ok(py.detach(|| f(&mut self.lock())))
    }

    /// One turn taken by `f` (Format 18.5): a runtime callable's error is
    /// raised (the turn taken back, as by undo()), else the turn document.
    fn step<'py>(
        &self,
        py: Python<'py>,
        f: impl FnOnce(&mut troupe::Session) -> troupe::Result<troupe::TurnResult> + Send,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = self.key();
        let result = self.with(py, |s| {
            TURNING.with(|t| t.borrow_mut().push(key));
            let r = f(s);
            let failed = self
                .hook_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some();
            if failed && r.is_ok() {
                s.undo();
            }
            TURNING.with(|t| t.borrow_mut().retain(|k| *k != key));
            r
        })?;
        if let Some(err) = take_hook_error(&self.hook_error) {
            return Err(err);
        }
        let turn = result.or_raise(py)?;
        let out = ser_to_py(py, &turn)?;
        // The diagnostics as every diagnostic dict (Format 18.6, 20.1).
        out.set_item("diagnostics", diagnostics_to_py(py, &turn.diagnostics)?)?;
        Ok(out)
    }

    fn lock(&self) -> MutexGuard<'_, troupe::Session> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Session {
    /// One turn (Format 18.5): `text` said by the first player, or by the
    /// player whose character ID is `player`. Returns the turn document of
    /// `troupe run --json` (turn, messages, reply, changes, events, safety,
    /// …, diagnostics) as a dict; `diagnostics` lists a runtime callable's
    /// dropped changes (Format 18.6, 18.7), `[]` when none.
    ///
    /// Raises TroupeError: kind 'ended' once the session has ended; kind
    /// 'refused' when `player` is not a player's character ID (nothing is
    /// played); kind 'hook' when a runtime callable raised or returned
    /// something that is not a proposal (the turn is then taken back, as by
    /// undo()).
    #[pyo3(signature = (text, player=None))]
    fn turn<'py>(
        &self,
        py: Python<'py>,
        text: String,
        player: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.step(py, |s| match &player {
            Some(p) => s.turn_as(p, &text),
            None => s.turn(&text),
        })
    }

    /// One turn whose responder the host names (Format 18.9, the `manual`
    /// turn order; any strategy takes it): `character` answers `text`, said
    /// by the first player. Returns the turn document, as turn() does.
    ///
    /// Raises TroupeError: kind 'refused' when `character` is not a speaker
    /// at the input message (not present, muted, a player or not in the
    /// cast; nothing is written); otherwise as turn().
    fn turn_to<'py>(
        &self,
        py: Python<'py>,
        character: String,
        text: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.step(py, |s| s.turn_to(&character, &text))
    }

    /// The flattened state at the current message (Format 8.6), every
    /// variable by state name, hidden ones included.
    #[getter]
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self.with(py, |s| s.state())?;
        to_py(py, &Value::Object(state))
    }

    /// The state with only the visible variables (what a player may see).
    #[getter]
    fn visible_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self.with(py, |s| s.visible_state())?;
        to_py(py, &Value::Object(state))
    }

    /// True when no more turns are taken (the story ended, or safety
    /// stopped the session).
    #[getter]
    fn ended(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |s| s.ended())
    }

    /// The story's outcome at the current message (Format 9.3), or None.
    #[getter]
    fn outcome(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| s.outcome())
    }

    /// The rubric score (Format 19.6) as a dict, or None without a rubric.
    #[getter]
    fn score<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let score = self.with(py, |s| s.score())?;
        ser_to_py(py, &score)
    }

    /// What the opening root did (text, firings, ended) as a dict, or None.
    #[getter]
    fn opening<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let opening = self.with(py, |s| s.opening())?;
        ser_to_py(py, &opening)
    }

    /// The header written on line 1 of the session file (Format 12.2).
    #[getter]
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let header = self.with(py, |s| s.header().clone())?;
        to_py(py, &header)
    }

    /// The current message's ID, or None before the first message.
    #[getter]
    fn current_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| s.current_id().map(str::to_string))
    }

    /// The host changes the difficulty settings from now on (Format 8.9):
    /// `settings` is a dict `{"difficulty"?: preset, "knobs"?: {knob:
    /// number}}`. Writes a settings message by the narrator; later
    /// conditions read the new values, variables and recorded firings keep
    /// theirs. Returns `{"message", "firings", "ended", "outcome"}`.
    ///
    /// Raises TroupeError: kind 'refused' with SETTINGS_INVALID,
    /// SETTINGS_NOT_DECLARED or UNKNOWN_FIELD diagnostics (nothing is
    /// written); kind 'ended' once the session has ended; kind 'invalid'
    /// when `settings` is not JSON-like.
    fn change_settings<'py>(
        &self,
        py: Python<'py>,
        settings: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let settings =
            to_json(settings, "settings", 0).map_err(|e| troupe_error(py, "invalid", &e, &[]))?;
        let result = self
            .with(py, |s| s.change_settings(&settings))?
            .or_raise(py)?;
        ser_to_py(py, &result)
    }

    /// Takes the last turn back (Format 18.4); nothing written is lost.
    /// False when there is no turn to undo.
    fn undo(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |s| s.undo())
    }

    /// Makes message `id` the current one (the next input is its child).
    /// False when there is no such message.
    fn go_to(&self, py: Python<'_>, id: String) -> PyResult<bool> {
        self.with(py, |s| s.go_to(&id))
    }

    /// The session file's text so far (Format 18.8): the header line, then
    /// one line per message. Same pack, settings and inputs: same text.
    fn jsonl(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.jsonl().to_string())
    }

    /// The session so far as a History.
    fn history(&self, py: Python<'_>) -> PyResult<History> {
        let inner = self.with(py, |s| s.history(&self.pack))?.or_raise(py)?;
        Ok(History { inner })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| {
            format!(
                "<troupe.Session at {:?}{}>",
                s.current_id().unwrap_or(""),
                if s.ended() { ", ended" } else { "" }
            )
        })
    }
}

// ------------------------------------------------------------- the hook

/// The model hook (Format 18.7): a Python callable asked for each turn's
/// proposal. What it returns is validated as any adapter's proposal; when
/// it raises or returns garbage, the error waits in `error` for
/// `Session.turn` to raise.
struct PyRuntime {
    callable: Py<PyAny>,
    error: Arc<Mutex<Option<PyErr>>>,
}

impl PyRuntime {
    fn ask(
        &self,
        py: Python<'_>,
        ctx: &troupe::TurnContext<'_>,
    ) -> PyResult<Option<troupe::Proposal>> {
        let d = PyDict::new(py);
        d.set_item("input", ctx.input)?;
        d.set_item("input_id", ctx.input_id)?;
        d.set_item("reply_id", ctx.reply_id)?;
        d.set_item("responder", ctx.responder)?;
        d.set_item("seed", ctx.seed)?;
        d.set_item("state", to_py(py, &Value::Object(ctx.state()))?)?;
        // The prompt of the model runtime (Format 24.3, 24.4), as
        // `troupe run --runtime model` sends it at this turn.
        let structured = troupe::Structured::JsonSchema;
        d.set_item("messages", ser_to_py(py, &ctx.prompt(structured))?)?;
        d.set_item(
            "response_format",
            ser_to_py(py, &ctx.response_format(structured))?,
        )?;
        let answer = self.callable.bind(py).call1((d,))?;
        let garbage =
            |why: &str| troupe_error(py, "hook", &format!("the runtime callable {why}"), &[]);
        if answer.is_none() {
            return Ok(None);
        }
        let Ok(answer) = answer.cast::<PyDict>() else {
            let ty = answer.get_type().name()?.to_string();
            return Err(garbage(&format!(
                "returned a {ty}; it must return None or a dict {{\"reply\": str | None, \"changes\": list}}"
            )));
        };
        let mut reply = None;
        let mut changes = Vec::new();
        for (k, v) in answer.iter() {
            let key = k.extract::<String>().unwrap_or_default();
            match key.as_str() {
                "reply" if v.is_none() => {}
                "reply" => match v.cast::<PyString>() {
                    Ok(s) => reply = Some(s.to_cow()?.into_owned()),
                    Err(_) => return Err(garbage("returned a reply that is not a str or None")),
                },
                "changes" if v.is_none() => {}
                "changes" => match to_json(&v, "changes", 0)
                    .map_err(|e| garbage(&format!("returned {e}")))?
                {
                    Value::Array(a) => changes = a,
                    _ => return Err(garbage("returned changes that are not a list")),
                },
                _ => {
                    return Err(garbage(&format!(
                        "returned the key {:?}; a proposal has only reply and changes",
                        k.str()?.to_string()
                    )))
                }
            }
        }
        Ok(Some(troupe::Proposal::adapter(reply, changes)))
    }
}

impl troupe::Runtime for PyRuntime {
    fn name(&self) -> &str {
        "python"
    }

    fn propose(&mut self, ctx: &troupe::TurnContext<'_>) -> Option<troupe::Proposal> {
        Python::attach(|py| match self.ask(py, ctx) {
            Ok(p) => p,
            Err(e) => {
                let e = if e.is_instance_of::<TroupeError>(py) {
                    e
                } else {
                    let wrapped =
                        troupe_error(py, "hook", &format!("the runtime callable raised {e}"), &[]);
                    wrapped.set_cause(py, Some(e));
                    wrapped
                };
                *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                None
            }
        })
    }
}

// ---------------------------------------------------------------- History

/// A recorded session compiled with its pack: the state, the ending, who
/// knows what and which lore is active, at any message. Immutable; safe to
/// share between threads.
#[pyclass(frozen, module = "troupe")]
struct History {
    inner: troupe::History,
}

#[pymethods]
impl History {
    /// The message IDs in file order.
    #[getter]
    fn message_ids(&self) -> Vec<String> {
        self.inner
            .message_ids()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The last message in file order, or None.
    #[getter]
    fn last_id(&self) -> Option<String> {
        self.inner.last_id().map(str::to_string)
    }

    /// The scenario's ID.
    #[getter]
    fn scenario(&self) -> &str {
        self.inner.scenario()
    }

    /// The flattened state (Format 8.6) at message `id` as a dict.
    /// Raises TroupeError ('not_found') when there is no such message.
    fn state_at<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let state = py.detach(|| self.inner.state_at(&id)).or_raise(py)?;
        to_py(py, &Value::Object(state))
    }

    /// The `troupe state --json` document at message `at` (None: the
    /// initial state): at, turn, round, ended, outcome, state.
    #[pyo3(signature = (at=None))]
    fn state<'py>(&self, py: Python<'py>, at: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let view = py.detach(|| self.inner.state(at.as_deref())).or_raise(py)?;
        ser_to_py(py, &view)
    }

    /// Who knows part `part` (an index) or, with summary=True, the summary
    /// of message `id` (Format 7.4, 12.5): character IDs in code point order.
    #[pyo3(signature = (id, part=None, summary=false))]
    fn knows(
        &self,
        py: Python<'_>,
        id: String,
        part: Option<usize>,
        summary: bool,
    ) -> PyResult<Vec<String>> {
        let what = match (part, summary) {
            (Some(p), false) => troupe::Knowable::Part(p),
            (None, true) => troupe::Knowable::Summary,
            _ => {
                return Err(troupe_error(
                    py,
                    "refused",
                    "knows() needs exactly one of part=N or summary=True",
                    &[],
                ))
            }
        };
        py.detach(|| self.inner.knows(&id, what)).or_raise(py)
    }

    /// The `troupe ended --json` document at message `id`: at, ended,
    /// ending (id, kind, message) and outcome.
    fn ended_at<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let view = py.detach(|| self.inner.ended_at(&id)).or_raise(py)?;
        ser_to_py(py, &view)
    }

    /// The `troupe explain --json` document at message `id`: which lore
    /// entries are active and why (Format 5.3).
    fn explain<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let view = py.detach(|| self.inner.explain(&id)).or_raise(py)?;
        ser_to_py(py, &view)
    }

    /// Renders template `text` (Format 10) at message `at` (None: the
    /// initial state) for character `char` (and owner `owner`; narrator:
    /// the text is for a narrator message; per_chat: the text is a
    /// template outside message parts, so `pick` is stable per session as
    /// a prompt renders it, Format 10.6). Raises TroupeError ('invalid',
    /// TEMPLATE_SYNTAX) when `text` is not a template.
    #[pyo3(signature = (text, at=None, char=None, owner=None, narrator=false, per_chat=false))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, as start()
    fn render(
        &self,
        py: Python<'_>,
        text: String,
        at: Option<String>,
        char: Option<String>,
        owner: Option<String>,
        narrator: bool,
        per_chat: bool,
    ) -> PyResult<String> {
        let who = {
            let mut o = troupe::RenderOptions::default();
            o.char = char;
            o.owner = owner;
            o.narrator = narrator;
            o.per_chat = per_chat;
            o
        };
        py.detach(|| self.inner.render(&text, at.as_deref(), &who))
            .or_raise(py)
    }

    /// The transcript of the path of message `at` (None: the last message
    /// in file order), root first, every part rendered at its message's
    /// state (Format 20, 20.1; `troupe transcript`). format 'json' (the
    /// default): the `troupe transcript --format json` document as a dict
    /// (scenario, at, messages with id, author, name, hidden, parts);
    /// 'text' or 'markdown': that form as a str (not escaped for a
    /// terminal).
    ///
    /// Raises TroupeError: 'not_found' when there is no message `at`;
    /// 'refused' when `format` is none of json, text, markdown.
    #[pyo3(signature = (at=None, format="json"))]
    fn transcript<'py>(
        &self,
        py: Python<'py>,
        at: Option<String>,
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !matches!(format, "json" | "text" | "markdown") {
            return Err(troupe_error(
                py,
                "refused",
                &format!("format `{format}` is not one of: json, text, markdown"),
                &[],
            ));
        }
        let t = py
            .detach(|| self.inner.transcript(at.as_deref()))
            .or_raise(py)?;
        match format {
            "text" => Ok(PyString::new(py, &t.to_text()).into_any()),
            "markdown" => Ok(PyString::new(py, &t.to_markdown()).into_any()),
            _ => ser_to_py(py, &t),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "<troupe.History {} messages of {:?}>",
            self.inner.message_ids().len(),
            self.inner.scenario()
        )
    }
}

// ----------------------------------------------------------------- tools

/// The `troupe check --json` document for one or more paths (packs,
/// bundles, packages; sessions after their bundle): valid, errors,
/// warnings, diagnostics. With strict=True warnings make it invalid.
/// Never raises for bad input: it is reported in the document.
#[pyfunction]
#[pyo3(signature = (*paths, strict=false))]
fn check<'py>(py: Python<'py>, paths: Vec<PathBuf>, strict: bool) -> PyResult<Bound<'py, PyAny>> {
    if paths.is_empty() {
        return Err(troupe_error(
            py,
            "refused",
            "check() needs at least one path",
            &[],
        ));
    }
    let doc = py.detach(|| troupe::check_report(&paths, strict));
    to_py(py, &doc)
}

/// The `troupe test --json` document of the pack directory `path` (Format
/// 21.2): pack, status, exit_code, stages, coverage; `test` runs one
/// fixture by name. Raises TroupeError ('not_found') when `path` is not a
/// pack directory or no fixture has that name.
#[pyfunction]
#[pyo3(signature = (path, test=None))]
fn test<'py>(py: Python<'py>, path: PathBuf, test: Option<String>) -> PyResult<Bound<'py, PyAny>> {
    let doc = py
        .detach(|| troupe::test_report(&path, test.as_deref()))
        .or_raise(py)?;
    to_py(py, &doc)
}

/// Evaluates CEL expression `expr` (Troupe's subset, Format 11) with the
/// keyword arguments as its variables, like `troupe cel eval EXPR --var
/// NAME=JSON`; returns the value (bool, int, float, str, list, dict).
/// Raises TroupeError: 'invalid' (CEL_SYNTAX, CEL_TYPE, a binding that is
/// not a CEL value), 'evaluation' (division by zero, a missing key, …).
#[pyfunction]
#[pyo3(signature = (expr, **bindings))]
fn cel_eval<'py>(
    py: Python<'py>,
    expr: String,
    bindings: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut vars: Vec<(String, Value)> = Vec::new();
    if let Some(b) = bindings {
        for (k, v) in b.iter() {
            let name: String = k.extract()?;
            let value = to_json(&v, &format!("binding `{name}`"), 0)
                .map_err(|e| troupe_error(py, "invalid", &e, &[]))?;
            vars.push((name, value));
        }
    }
    let refs: Vec<(&str, Value)> = vars.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let value = troupe::cel_eval(&expr, &refs).or_raise(py)?;
    to_py(py, &value)
}

/// Benchmark baseline (bindings/python/bench.py): plays `lines` in a new
/// session `rounds` times from Rust alone (each turn's result serialized
/// as the binding does, but never converted to Python); returns (turns,
/// seconds).
#[pyfunction]
fn _bench_turns(
    py: Python<'_>,
    pack: &Bound<'_, Pack>,
    lines: Vec<String>,
    rounds: usize,
) -> PyResult<(usize, f64)> {
    let pack = pack.get();
    py.detach(|| {
        let start = std::time::Instant::now();
        let mut turns = 0;
        for seed in 0..rounds {
            let mut s = pack
                .inner
                .start(troupe::SessionOptions::default().seed(seed as u64))?;
            turns += bench_play(&mut s, &lines)?;
        }
        Ok((turns, start.elapsed().as_secs_f64()))
    })
    .or_raise(py)
}

/// The benchmarks' play: `lines` as turns until the session ends; returns
/// how many were played.
fn bench_play(s: &mut troupe::Session, lines: &[String]) -> troupe::Result<usize> {
    let mut turns = 0;
    for line in lines {
        if s.ended() {
            break;
        }
        std::hint::black_box(s.turn(line)?);
        turns += 1;
    }
    Ok(turns)
}

/// Benchmark baseline: [`_bench_turns`] with the sessions started before
/// the clock starts (turns only: the start's share of a played session is
/// the difference, issue 41 item 4); returns (turns, seconds).
#[pyfunction]
fn _bench_turns_only(
    py: Python<'_>,
    pack: &Bound<'_, Pack>,
    lines: Vec<String>,
    rounds: usize,
) -> PyResult<(usize, f64)> {
    let pack = pack.get();
    py.detach(|| {
        let mut sessions = (0..rounds)
            .map(|seed| {
                pack.inner
                    .start(troupe::SessionOptions::default().seed(seed as u64))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let start = std::time::Instant::now();
        let mut turns = 0;
        for s in &mut sessions {
            turns += bench_play(s, &lines)?;
        }
        Ok((turns, start.elapsed().as_secs_f64()))
    })
    .or_raise(py)
}

/// Benchmark baseline: `state_at` of every message of `history`, `rounds`
/// times, from Rust alone; returns (queries, seconds).
#[pyfunction]
fn _bench_state_at(
    py: Python<'_>,
    history: &Bound<'_, History>,
    rounds: usize,
) -> PyResult<(usize, f64)> {
    let history = history.get();
    let ids: Vec<String> = history.message_ids();
    py.detach(|| {
        let start = std::time::Instant::now();
        let mut n = 0;
        for _ in 0..rounds {
            for id in &ids {
                std::hint::black_box(history.inner.state_at(id)?);
                n += 1;
            }
        }
        Ok((n, start.elapsed().as_secs_f64()))
    })
    .or_raise(py)
}

/// The native module; `troupe/__init__.py` re-exports it.
#[pymodule]
fn _troupe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Pack>()?;
    m.add_class::<Session>()?;
    m.add_class::<History>()?;
    m.add("TroupeError", m.py().get_type::<TroupeError>())?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(test, m)?)?;
    m.add_function(wrap_pyfunction!(cel_eval, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_turns, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_turns_only, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_state_at, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
