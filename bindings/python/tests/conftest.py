"""Shared fixtures: the repository's example packs and the CLI to compare with."""

import os
import pathlib
import subprocess
import json

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
NEGOTIATION = EXAMPLES / "packs" / "everyday-negotiation"
HARBOR = EXAMPLES / "packs" / "harbor-lights"
INN = HARBOR / "sessions" / "inn.jsonl"
SCRIPT = [
    "Hello Marco, I like the hatchback.",
    "I can offer 7,000 cash today.",
    "The tyres are worn, so 8,000 is fair.",
    "Deal at 8,200?",
]


def cli_path():
    """The `troupe` binary: $TROUPE_BIN, else the repository's debug build."""
    given = os.environ.get("TROUPE_BIN")
    path = pathlib.Path(given) if given else ROOT / "target" / "debug" / "troupe"
    return path if path.is_file() else None


def run_cli(*args):
    """Runs the CLI; returns (exit code, stdout)."""
    exe = cli_path()
    if exe is None:
        if os.environ.get("CI"):
            raise AssertionError("the troupe binary is missing (set TROUPE_BIN)")
        pytest.skip("no troupe binary (build it with `cargo build`, or set TROUPE_BIN)")
    done = subprocess.run(
        [str(exe), *map(str, args)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout


def cli_json(*args):
    """Runs the CLI with --json and parses its document."""
    _, out = run_cli(*args, "--json")
    return json.loads(out)


@pytest.fixture(scope="session")
def negotiation():
    import troupe

    return troupe.Pack.open(NEGOTIATION)


@pytest.fixture(scope="session")
def harbor():
    import troupe

    return troupe.Pack.open(HARBOR)
