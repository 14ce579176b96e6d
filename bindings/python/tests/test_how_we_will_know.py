"""Issue 16, "How we will know": a short script in a fresh environment gives
the same values as the CLI."""

import pytest

import troupe
from conftest import HARBOR, INN, NEGOTIATION, SCRIPT, cli_json


def test_the_script_gives_the_cli_values(tmp_path):
    # Open the negotiation pack, play four turns, read the state.
    pack = troupe.Pack.open(NEGOTIATION)
    session = pack.start(seed=1)
    turns = [session.turn(line) for line in SCRIPT]
    script = tmp_path / "script.txt"
    script.write_text("\n".join(SCRIPT))
    out = tmp_path / "played.jsonl"
    run = cli_json("run", NEGOTIATION, "--seed", "1", "--script", script, "--out", out)
    assert run["turns"] == turns
    assert out.read_text() == session.jsonl()
    at = session.current_id
    assert cli_json("state", NEGOTIATION, out, "--at", at)["state"] == session.state

    # Replay a recorded session and ask the state at a message.
    harbor = troupe.Pack.open(HARBOR)
    history = harbor.history(INN.read_text())
    assert history.state_at("m3") == cli_json("state", HARBOR, INN, "--at", "m3")["state"]
    # default 30, +10 by the opening at m1, +10 by m3's changes
    assert history.state_at("m3")["trust.ines"] == 30 + 10 + 10

    # Drive turns through a Python callable that proposes changes: allowed
    # ones applied and clamped, a forbidden one refused.
    proposals = iter([
        {"reply": "Deal!", "changes": [{"add": {"deal_progress": 30, "impression": 80}}]},
        {"reply": "No.", "changes": [{"set": {"deal_progress": 5}}, {"set": {"turn": 99}}]},
    ])
    hooked = pack.start(runtime=lambda ctx: next(proposals))
    first = hooked.turn("Hello")
    assert hooked.state["impression"] == 100  # 50 + 80 clamped to max 100
    # impression > 70 fires dealer_warms_up: deal_progress 30 + 10.
    assert [f["event"] for f in first["firings"]] == ["dealer_warms_up"]
    assert hooked.state["deal_progress"] == 40
    assert first["state_delta"] == {"deal_progress": 40, "impression": 100}
    second = hooked.turn("Well?")
    assert second["diagnostics"], second  # `turn` is not a variable one may set
    assert hooked.state["deal_progress"] == 40  # the whole proposal dropped
    path = tmp_path / "hooked.jsonl"
    path.write_text(hooked.jsonl())
    assert cli_json("state", NEGOTIATION, path, "--at", hooked.current_id)["state"] == hooked.state


@pytest.mark.parametrize("seed", [0, 7])
def test_session_files_check_with_the_cli(tmp_path, negotiation, seed):
    session = negotiation.start(seed=seed)
    for line in SCRIPT:
        session.turn(line)
    path = tmp_path / "s.jsonl"
    path.write_text(session.jsonl())
    assert cli_json("check", NEGOTIATION, path)["valid"] is True
