"""Bad input of any kind: a TroupeError with diagnostics, never a crash."""

import json

import pytest

import troupe
from conftest import EXAMPLES, NEGOTIATION


def test_missing_files():
    with pytest.raises(troupe.TroupeError) as err:
        troupe.Pack.open("no/such/pack")
    assert err.value.kind == "not_found"
    d = err.value.diagnostics[0]
    assert d["code"] == "MISSING_FILE"
    assert set(["code", "severity", "file", "pointer", "line", "column", "message"]) <= set(d)


def test_malformed_json():
    with pytest.raises(troupe.TroupeError) as err:
        troupe.Pack.from_bundle('{"troupe": "0.1"')
    assert err.value.kind == "invalid"
    assert err.value.diagnostics[0]["code"] == "PARSE"
    assert err.value.diagnostics[0]["file"] == "bundle"
    assert "does not conform" in str(err.value)
    with pytest.raises(troupe.TroupeError):
        troupe.Pack.from_bundle("")
    with pytest.raises(troupe.TroupeError):
        troupe.Pack.from_bundle("- just\n- a list\n")


def test_broken_examples_all_report_their_code():
    # Each bundle of examples/broken raises with its diagnostics, or —
    # when what it shows is only a warning (DEAD_LOGIC) — opens and says it.
    expected = json.loads((EXAMPLES / "broken" / "EXPECTED.json").read_text())
    for path in sorted((EXAMPLES / "broken").glob("*.bundle.json")):
        codes = set(expected[path.name]["codes"])
        try:
            pack = troupe.Pack.open(path)
        except troupe.TroupeError as err:
            assert err.diagnostics, path
            continue
        warnings = pack.diagnostics
        assert warnings, path
        assert all(d["severity"] == "warning" for d in warnings), path
        assert codes <= {d["code"] for d in warnings}, (path, warnings)


def test_bad_packages():
    for data in [b"", b"not a zip", b"PK\x03\x04" + b"\0" * 100]:
        with pytest.raises(troupe.TroupeError) as err:
            troupe.Pack.from_package(data)
        assert err.value.kind == "invalid"
    with pytest.raises(TypeError):
        troupe.Pack.from_package("text, not bytes")


def test_bad_sessions(negotiation):
    for text in ["", "{}\n", "not json\n", '{"troupe":"0.1","kind":"session","scenario":"nope"}\n']:
        with pytest.raises(troupe.TroupeError) as err:
            negotiation.history(text)
        assert err.value.kind == "invalid"
    with pytest.raises(troupe.TroupeError):
        negotiation.history_file("no/such.jsonl")


def test_bad_players(negotiation):
    with pytest.raises(troupe.TroupeError):
        negotiation.start(players=[{"seat": object()}])
    with pytest.raises(troupe.TroupeError):
        negotiation.start(players=[{"seat": "nobody", "character": "ghost"}])


def test_error_is_one_type():
    assert issubclass(troupe.TroupeError, Exception)
    assert troupe.TroupeError.__module__ == "troupe"
