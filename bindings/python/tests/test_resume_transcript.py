"""This session's API (issues 37, 44): Pack.resume (Format 18.10),
Session.turn_to (18.9), History.transcript (20, 20.1) and render's per_chat
(10.6), against the uninterrupted session and the CLI."""

import json

import pytest

import troupe
from conftest import EXAMPLES, HARBOR, INN, NEGOTIATION, SCRIPT, run_cli

WALKTHROUGH_BUNDLE = EXAMPLES / "bundles" / "harbor-lights.bundle.json"
WALKTHROUGH = EXAMPLES / "bundles" / "sessions" / "harbor-lights.walkthrough.jsonl"


def character(id, name):
    return {"id": id, "name": name, "fictional": True, "age_band": "adult"}


def ensemble(strategy):
    """Two characters and a player; each character owns its rules (18.9)."""
    bundle = {
        "troupe": "0.1",
        "kind": "bundle",
        "characters": [character("greaves", "Greaves"), character("priya", "Priya")],
        "scenarios": [
            {
                "id": "flat",
                "name": "The flat",
                "turn_order": {"strategy": strategy},
                "cast": [
                    {"character": "greaves"},
                    {"character": "priya"},
                    {"seat": "player", "player": True},
                ],
                "rules": [
                    {"id": "g-any", "by": "greaves", "replies": ["Rent is due."]},
                    {"id": "p-any", "by": "priya", "replies": ["I saw the damp."]},
                ],
            }
        ],
    }
    return troupe.Pack.from_bundle(json.dumps(bundle))


# ------------------------------------------------------------------ resume


def test_resume_at_every_cut_gives_the_uninterrupted_bytes(negotiation, tmp_path):
    whole = negotiation.start(seed=3)
    answers = [whole.turn(line) for line in SCRIPT]
    for cut in range(len(SCRIPT)):
        part = negotiation.start(seed=3)
        for line in SCRIPT[:cut]:
            part.turn(line)
        out = tmp_path / f"resumed-{cut}.jsonl"
        resumed = negotiation.resume(part.jsonl(), out=out)
        assert resumed.current_id == part.current_id
        assert resumed.state == part.state
        assert [resumed.turn(line) for line in SCRIPT[cut:]] == answers[cut:]
        assert resumed.jsonl() == whole.jsonl()
        # out= gets the resumed file's lines, then the new ones.
        assert out.read_text() == whole.jsonl()


def test_resume_at_an_earlier_message_branches_as_go_to(negotiation):
    whole = negotiation.start(seed=1)
    for line in SCRIPT[:3]:
        whole.turn(line)
    text = whole.jsonl()
    resumed = negotiation.resume(text, at="m2")
    assert resumed.current_id == "m2"
    assert whole.go_to("m2") is True
    assert resumed.turn("Deal at 8,200?") == whole.turn("Deal at 8,200?")
    assert resumed.jsonl() == whole.jsonl()


def test_resume_under_a_runtime_callable(negotiation):
    def model(ctx):
        return {"reply": "Noted: " + ctx["input"], "changes": [{"add": {"impression": 5}}]}

    whole = negotiation.start(seed=2, runtime=model)
    for line in SCRIPT[:3]:
        whole.turn(line)
    part = negotiation.start(seed=2, runtime=model)
    part.turn(SCRIPT[0])
    resumed = negotiation.resume(part.jsonl(), runtime=model)
    for line in SCRIPT[1:3]:
        resumed.turn(line)
    assert resumed.jsonl() == whole.jsonl()


def test_resume_errors(negotiation):
    session = negotiation.start()
    session.turn(SCRIPT[0])
    text = session.jsonl()
    with pytest.raises(troupe.TroupeError) as e:
        negotiation.resume(text, at="m99")
    assert e.value.kind == "refused"
    with pytest.raises(troupe.TroupeError) as e:
        negotiation.resume(text, runtime="fake")
    assert e.value.kind == "refused"
    with pytest.raises(troupe.TroupeError) as e:
        negotiation.resume("{not json")
    assert e.value.kind == "invalid"
    assert e.value.diagnostics
    with pytest.raises(troupe.TroupeError) as e:
        negotiation.resume(text, runtime=42)
    assert e.value.kind == "refused"


# ----------------------------------------------------------------- turn_to


def test_turn_to_picks_the_responder_under_manual():
    pack = ensemble("manual")
    session = pack.start()
    # No host's choice: manual falls back to first_present (Greaves).
    turn = session.turn("Hello?")
    assert [r["author"] for r in turn["replies"]] == ["greaves"]
    assert turn["reply"] == "Rent is due."
    # The host names Priya: she answers, chosen by the host.
    turn = session.turn_to("priya", "Hello?")
    assert [r["author"] for r in turn["replies"]] == ["priya"]
    assert turn["replies"][0]["chosen"]["why"] == "host"
    assert turn["reply"] == "I saw the damp."
    assert turn["diagnostics"] == []


def test_turn_to_under_the_default_order_and_at_naming():
    pack = ensemble("first_present")
    session = pack.start()
    assert session.turn("@priya hello")["replies"][0]["author"] == "priya"
    assert session.turn("hello")["replies"][0]["author"] == "greaves"
    assert session.turn_to("priya", "hello")["replies"][0]["author"] == "priya"


def test_turn_to_refuses_a_character_that_is_not_a_speaker():
    session = ensemble("manual").start()
    before = session.jsonl()
    for who in ["nobody", "player"]:
        with pytest.raises(troupe.TroupeError) as e:
            session.turn_to(who, "Hello?")
        assert e.value.kind == "refused"
    assert session.jsonl() == before


def test_turn_to_resumes_to_the_same_bytes():
    pack = ensemble("manual")
    whole = pack.start(seed=5)
    whole.turn_to("priya", "one")
    whole.turn("two")
    whole.turn_to("greaves", "three")
    part = pack.start(seed=5)
    part.turn_to("priya", "one")
    resumed = pack.resume(part.jsonl())
    resumed.turn("two")
    resumed.turn_to("greaves", "three")
    assert resumed.jsonl() == whole.jsonl()


# -------------------------------------------------------------- transcript


@pytest.mark.parametrize(
    "pack_path, session_path, at",
    [
        (HARBOR, INN, None),
        (HARBOR, INN, "m2"),
        (WALKTHROUGH_BUNDLE, WALKTHROUGH, None),
    ],
)
def test_transcript_equals_the_cli(pack_path, session_path, at):
    history = troupe.Pack.open(pack_path).history_file(session_path)
    at_args = ["--at", at] if at else []
    code, out = run_cli("transcript", pack_path, session_path, *at_args, "--format", "json")
    assert code == 0
    assert history.transcript(at=at) == json.loads(out)
    assert history.transcript(at=at, format="json") == json.loads(out)
    for form in ["text", "markdown"]:
        code, out = run_cli("transcript", pack_path, session_path, *at_args, "--format", form)
        assert code == 0
        # The CLI escapes control characters for the terminal; the sessions
        # here have none, so the texts are equal.
        assert history.transcript(at=at, format=form) == out


def test_transcript_of_a_played_session(negotiation):
    session = negotiation.start(seed=3)
    for line in SCRIPT[:2]:
        session.turn(line)
    t = session.history().transcript()
    assert t["at"] == session.current_id
    assert t["scenario"] == "used_car_negotiation"
    assert all("{{" not in p["text"] for m in t["messages"] for p in m["parts"])
    text = session.history().transcript(format="text")
    assert SCRIPT[0] in text


def test_transcript_errors(harbor):
    history = harbor.recorded_history("inn.jsonl")
    with pytest.raises(troupe.TroupeError) as e:
        history.transcript(at="m99")
    assert e.value.kind == "not_found"
    with pytest.raises(troupe.TroupeError) as e:
        history.transcript(format="html")
    assert e.value.kind == "refused"


# ------------------------------------------------------------ per_chat


def test_render_per_chat_equals_the_cli(harbor):
    history = harbor.history_file(INN)
    text = "{{pick: a, b, c, d, e, f, g, h}} {{random: 1, 2, 3, 4, 5, 6, 7, 8}}"
    for at in ["m1", "m2", "m3"]:
        for per_chat in [False, True]:
            flag = ["--per-chat"] if per_chat else []
            code, out = run_cli(
                "render", HARBOR, "--text", text, "--session", INN, "--at", at, *flag, "--json"
            )
            assert code == 0
            assert history.render(text, at=at, per_chat=per_chat) == json.loads(out)
    # Per chat, pick draws the same at every message (Format 10.6; random
    # is not said to be, so only pick is compared).
    pick = "{{pick: a, b, c, d, e, f, g, h}}"
    assert len({history.render(pick, at=at, per_chat=True) for at in ["m1", "m2", "m3"]}) == 1
