"""The model hook: a Python callable proposes, the engine validates (Format 18.7)."""

import pytest

import troupe
from conftest import NEGOTIATION, cli_json


def test_hook_sees_the_context_and_proposes(negotiation, tmp_path):
    seen = []

    def model(ctx):
        seen.append(ctx)
        return {"reply": f"You said: {ctx['input']}", "changes": [{"add": {"impression": 5}}]}

    session = negotiation.start(runtime=model, seed=9)
    result = session.turn("{{user}} hi")
    assert result["reply"] == "You said: {{user}} hi"
    assert result["rule"] is None
    assert session.state["impression"] == 55
    ctx = seen[0]
    assert ctx["input"] == "{{user}} hi"
    assert ctx["responder"] == "marco"
    assert ctx["seed"] == 9
    assert ctx["state"]["impression"] == 50
    assert ctx["input_id"] and ctx["reply_id"]
    # The CLI reads the written session to the same state.
    path = tmp_path / "hook.jsonl"
    path.write_text(session.jsonl())
    assert cli_json("state", NEGOTIATION, path, "--at", session.current_id)["state"] == session.state


def test_hook_gets_the_model_runtimes_prompt(negotiation, tmp_path):
    """ctx["messages"] and ctx["response_format"] are what `troupe run
    --runtime model` would send at the turn (Format 24.3, 24.4): the same as
    `troupe prompt PACK SESSION --at INPUT --json` prints for the session."""
    seen = []

    def model(ctx):
        seen.append(ctx)
        return {"reply": f"Reply {len(seen)}."}

    session = negotiation.start(runtime=model, seed=4)
    session.turn("Hello Marco, I like the hatchback.")
    session.turn("I can offer 7,000 cash today.")
    path = tmp_path / "prompted.jsonl"
    path.write_text(session.jsonl())
    for ctx in seen:
        body = cli_json("prompt", NEGOTIATION, path, "--at", ctx["input_id"])
        assert ctx["messages"] == body["messages"]
        assert ctx["response_format"] == body["response_format"]
    first, second = (ctx["messages"] for ctx in seen)
    assert first[0]["role"] == "system"
    assert "## State" in first[0]["content"]
    assert first[-1] == {"role": "user", "content": "Player: Hello Marco, I like the hatchback."}
    # The reply of turn 1 is the responder's own line in turn 2's transcript.
    assert {"role": "assistant", "content": "Reply 1."} in second
    assert second[-1]["content"].endswith("I can offer 7,000 cash today.")
    assert seen[0]["response_format"]["type"] == "json_schema"
    assert seen[0]["response_format"]["json_schema"]["name"] == "proposal"


def test_allowed_changes_are_clamped_forbidden_ones_dropped(negotiation):
    proposals = iter([
        {"reply": "Great!", "changes": [{"add": {"impression": 999}}]},
        {"reply": "Sure.", "changes": [{"add": {"impression": -5}}, {"set": {"no_such": 1}}]},
        None,
        {"reply": None},
    ])
    session = negotiation.start(runtime=lambda ctx: next(proposals))
    session.turn("one")
    assert session.state["impression"] == 100  # clamped to max
    refused = session.turn("two")
    assert session.state["impression"] == 100  # the whole proposal dropped
    assert refused["reply"] == "Sure."
    assert refused["state_delta"] == {}
    codes = [d["code"] for d in refused["diagnostics"]]
    assert "UNKNOWN_VARIABLE" in codes, refused
    assert refused["diagnostics"][0]["pointer"].startswith("message:")
    assert session.turn("three")["diagnostics"] == []
    assert session.turn("four")["reply"] is None
    # The CLI reads the written session to the same state.
    assert session.history().state_at(session.current_id) == session.state


def test_a_hook_that_raises(negotiation):
    def broken(ctx):
        raise ValueError("the model is down")

    session = negotiation.start(runtime=broken)
    before = session.state
    with pytest.raises(troupe.TroupeError) as err:
        session.turn("hello")
    assert err.value.kind == "hook"
    assert "the model is down" in str(err.value)
    assert isinstance(err.value.__cause__, ValueError)
    assert session.state == before  # the turn was taken back


@pytest.mark.parametrize(
    "garbage",
    [42, "text", [1], {"reply": 5}, {"changes": "no"}, {"changes": [object()]}, {"other": 1}, {1: 2}],
)
def test_a_hook_that_returns_garbage(negotiation, garbage):
    session = negotiation.start(runtime=lambda ctx: garbage)
    with pytest.raises(troupe.TroupeError) as err:
        session.turn("hello")
    assert err.value.kind == "hook"
    # The session still works after the error.
    session2 = negotiation.start(runtime=lambda ctx: {"reply": "ok"})
    assert session2.turn("hello")["reply"] == "ok"


def test_a_hook_that_uses_its_own_session(negotiation):
    box = {}

    def model(ctx):
        box["session"].state  # the session is in this very turn
        return {"reply": "unreachable"}

    box["session"] = session = negotiation.start(runtime=model)
    with pytest.raises(troupe.TroupeError) as err:
        session.turn("hello")
    assert "runtime callable cannot use the session" in str(err.value)
    assert session.state["impression"] == 50  # usable again afterwards
