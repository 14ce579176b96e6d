"""Typing stubs of the `troupe` package (docs/python.md)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Literal, Optional, Union, overload

__version__: str

JSON = Any
"""A JSON value as Python: None, bool, int, float, str, list, dict."""

StrPath = Union[str, "PathLike[str]"]

Diagnostic = Dict[str, Any]
"""code, severity, file, pointer, line, column, message (and help)."""

TurnContext = Dict[str, Any]
"""What a runtime callable receives: input, input_id, reply_id, responder,
seed, state (the flattened state at the input message), messages (the model
runtime's prompt, Format 24.3: a list of {"role", "content"}) and
response_format (the request's response_format, Format 24.4)."""

ProposalDict = Dict[str, Any]
"""What a runtime callable returns: {"reply": str | None, "changes": list}."""

RuntimeHook = Callable[[TurnContext], Optional[ProposalDict]]

class TroupeError(Exception):
    """The one error of Troupe."""

    kind: Literal[
        "invalid", "refused", "ended", "not_found", "io", "unsupported", "limit", "runtime",
        "evaluation", "internal", "hook"
    ]
    """What failed: the input (invalid), the settings (refused), …"""
    diagnostics: List[Diagnostic]
    """The diagnostics that explain the failure; empty when the input was not at fault."""

class Pack:
    """An opened, checked story; immutable, shared between threads, picklable."""

    @staticmethod
    def open(path: StrPath) -> "Pack":
        """Opens a pack directory, a bundle (.json, .yaml) or a package (.troupe)."""
    @staticmethod
    def from_bundle(text: str) -> "Pack":
        """A bundle given as JSON or YAML text."""
    @staticmethod
    def from_package(data: bytes) -> "Pack":
        """A compiled package held in memory."""
    @property
    def name(self) -> str:
        """The name the pack was opened under."""
    @property
    def scenarios(self) -> List[Dict[str, Optional[str]]]:
        """The scenarios in bundle order: id, name, description."""
    @property
    def diagnostics(self) -> List[Diagnostic]:
        """The warnings of opening (errors raise instead)."""
    @property
    def from_ir(self) -> bool:
        """True when a package's compiled form was used."""
    @property
    def recorded(self) -> List[str]:
        """The names of the recorded sessions the pack carries."""
    @property
    def bundle(self) -> Dict[str, JSON]:
        """The checked bundle."""
    def compile(self) -> bytes:
        """The compiled package's bytes, as `troupe compile` writes them."""
    def start(
        self,
        scenario: Optional[str] = None,
        seed: int = 0,
        difficulty: Optional[str] = None,
        opening: Optional[str] = None,
        players: Optional[List[Dict[str, JSON]]] = None,
        characters: Optional[List[Dict[str, JSON]]] = None,
        player_name: Optional[str] = None,
        runtime: Union[None, Literal["rules", "fake"], RuntimeHook] = None,
        out: Optional[StrPath] = None,
    ) -> "Session":
        """Starts a session (Format 18.4)."""
    def resume(
        self,
        jsonl: str,
        at: Optional[str] = None,
        runtime: Union[None, Literal["rules"], RuntimeHook] = None,
        out: Optional[StrPath] = None,
    ) -> "Session":
        """Resumes a saved session from its JSONL text (Format 18.10): the
        same bytes as the uninterrupted session; `at` an earlier message
        branches there; raises TroupeError ('invalid', 'refused' for an
        unknown `at` or runtime='fake', 'io')."""
    def history(self, jsonl: str) -> "History":
        """A recorded session given as the text of its JSONL file."""
    def history_file(self, path: StrPath) -> "History":
        """A recorded session read from a file."""
    def recorded_history(self, name: str) -> "History":
        """One of the recorded sessions the pack carries."""
    def initial(self, scenario: Optional[str] = None) -> "History":
        """A History with no messages: the initial state."""
    def __reduce__(self) -> Any: ...

class Session:
    """A session being played; usable from threads (one turn at a time)."""

    def turn(self, text: str, player: Optional[str] = None) -> Dict[str, JSON]:
        """One turn; the turn document of `troupe run --json`, whose `diagnostics`
        lists a runtime callable's dropped changes (Format 18.6, 18.7)."""
    def turn_to(self, character: str, text: str) -> Dict[str, JSON]:
        """One turn whose responder the host names (Format 18.9); raises
        TroupeError ('refused') when `character` is not a speaker."""
    @property
    def state(self) -> Dict[str, JSON]:
        """The flattened state at the current message (Format 8.6)."""
    @property
    def visible_state(self) -> Dict[str, JSON]:
        """The state with only the visible variables."""
    @property
    def ended(self) -> bool:
        """True when no more turns are taken."""
    @property
    def outcome(self) -> Optional[str]:
        """The story's outcome, if it ended by one."""
    @property
    def score(self) -> Optional[Dict[str, JSON]]:
        """The rubric score, or None without a rubric."""
    @property
    def opening(self) -> Optional[Dict[str, JSON]]:
        """What the opening root did."""
    @property
    def header(self) -> Dict[str, JSON]:
        """The session file's header line."""
    @property
    def current_id(self) -> Optional[str]:
        """The current message's ID."""
    def change_settings(self, settings: Dict[str, JSON]) -> Dict[str, JSON]:
        """The host changes the difficulty preset and/or knob values from now
        on (Format 8.9): `{"difficulty": preset, "knobs": {knob: number}}`.
        Returns `{"message", "firings", "ended", "outcome"}`; raises
        TroupeError ('refused', with SETTINGS_* diagnostics; 'ended')."""
    def undo(self) -> bool:
        """Takes the last turn back; nothing written is lost."""
    def go_to(self, id: str) -> bool:
        """Makes message `id` the current one."""
    def jsonl(self) -> str:
        """The session file's text so far."""
    def history(self) -> "History":
        """The session so far as a History."""

class History:
    """A recorded session, asked about at any message; immutable."""

    @property
    def message_ids(self) -> List[str]:
        """The message IDs in file order."""
    @property
    def last_id(self) -> Optional[str]:
        """The last message in file order."""
    @property
    def scenario(self) -> str:
        """The scenario's ID."""
    def state_at(self, id: str) -> Dict[str, JSON]:
        """The flattened state at message `id`."""
    def state(self, at: Optional[str] = None) -> Dict[str, JSON]:
        """The `troupe state --json` document."""
    def knows(self, id: str, part: Optional[int] = None, summary: bool = False) -> List[str]:
        """Who knows a part or the summary of message `id`."""
    def ended_at(self, id: str) -> Dict[str, JSON]:
        """The `troupe ended --json` document."""
    def explain(self, id: str) -> Dict[str, JSON]:
        """The `troupe explain --json` document."""
    def render(
        self,
        text: str,
        at: Optional[str] = None,
        char: Optional[str] = None,
        owner: Optional[str] = None,
        narrator: bool = False,
        per_chat: bool = False,
    ) -> str:
        """Renders a template (Format 10) at a message; per_chat: as a
        template outside message parts (`pick` stable per session, 10.6)."""
    @overload
    def transcript(
        self, at: Optional[str] = None, format: Literal["json"] = "json"
    ) -> Dict[str, JSON]:
        """The path of `at` (None: the last message) as its audience reads
        it (Format 20, 20.1): the `troupe transcript --format json` document,
        or with format='text'/'markdown' that form as a str."""
    @overload
    def transcript(self, at: Optional[str], format: Literal["text", "markdown"]) -> str: ...
    @overload
    def transcript(self, *, format: Literal["text", "markdown"]) -> str: ...

def check(*paths: StrPath, strict: bool = False) -> Dict[str, JSON]:
    """The `troupe check --json` document."""

def test(path: StrPath, test: Optional[str] = None) -> Dict[str, JSON]:
    """The `troupe test --json` document."""

def cel_eval(expr: str, **bindings: JSON) -> JSON:
    """Evaluates a CEL expression with keyword arguments as its variables."""

def _from_package(data: bytes) -> Pack: ...
