"""Troupe from Python: open a pack, step sessions, ask what the state was,
plug in your own model, and run Troupe's checks and tests in-process.

The API (docs/python.md):

- :class:`Pack` — an opened, checked story (``Pack.open(path)``,
  ``Pack.from_bundle(text)``, ``Pack.from_package(data)``); immutable,
  shared between threads, pickles as its compiled package.
- :class:`Session` — a story played turn by turn (``pack.start(...)``).
- :class:`History` — a recorded session asked about at any message
  (``pack.history(jsonl_text)``).
- :func:`check`, :func:`test`, :func:`cel_eval` — the CLI's ``check
  --json``, ``test --json`` and ``cel eval``.
- :class:`TroupeError` — the one exception, with ``.kind`` and
  ``.diagnostics``.
"""

from ._troupe import (
    History,
    Pack,
    Session,
    TroupeError,
    __version__,
    cel_eval,
    check,
    test,
)

__all__ = [
    "History",
    "Pack",
    "Session",
    "TroupeError",
    "__version__",
    "cel_eval",
    "check",
    "test",
]


def _from_package(data: bytes) -> Pack:
    """Rebuilds a pickled :class:`Pack` from its compiled package bytes."""
    return Pack.from_package(data)
