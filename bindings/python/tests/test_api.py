"""Every call of the binding, against the CLI's answers where it has one."""

import json

import pytest

import troupe
from conftest import EXAMPLES, HARBOR, INN, NEGOTIATION, SCRIPT, cli_json, run_cli


def play(pack, script=SCRIPT, **options):
    session = pack.start(**options)
    turns = []
    for line in script:
        if session.ended:
            break
        turns.append(session.turn(line))
    return session, turns


def test_open_scenarios_and_diagnostics(negotiation):
    assert [s["id"] for s in negotiation.scenarios] == ["used_car_negotiation"]
    assert negotiation.scenarios[0]["name"] == "Negotiating a used car"
    assert isinstance(negotiation.diagnostics, list)
    assert negotiation.name.endswith("everyday-negotiation")
    assert not negotiation.from_ir
    assert negotiation.bundle["troupe"] == "0.1"
    assert "Pack" in repr(negotiation)


def test_turns_equal_run_json(negotiation, tmp_path):
    session, turns = play(negotiation, seed=3)
    script = tmp_path / "script.txt"
    script.write_text("\n".join(SCRIPT))
    doc = cli_json("run", NEGOTIATION, "--seed", "3", "--script", script)
    assert doc["turns"] == turns
    assert doc["opening"] == session.opening
    assert doc["score"] == session.score
    assert session.header["seed"] == 3
    assert session.current_id is not None


def test_session_state_undo_and_jsonl(negotiation, tmp_path):
    session = negotiation.start()
    before = session.state
    first = session.current_id
    result = session.turn("I can offer 7,000 cash today.")
    assert result["turn"] == 1
    assert session.state != before
    assert session.state["patience"] == 60 - 15
    assert "internal_counter" in session.state
    assert "internal_counter" not in session.visible_state
    assert session.ended is False and session.outcome is None
    assert session.undo() is True
    assert session.current_id == first and session.state == before
    assert session.jsonl().startswith('{"troupe":"0.1"')
    # The session file read back by the CLI has the session's state.
    path = tmp_path / "s.jsonl"
    session.turn("It's a lovely car.")
    path.write_text(session.jsonl())
    doc = cli_json("state", NEGOTIATION, path, "--at", session.current_id)
    assert doc["state"] == session.state
    assert session.history().state_at(session.current_id) == session.state
    assert session.go_to("m1") is True and session.go_to("nope") is False


def test_out_writes_the_session_file(negotiation, tmp_path):
    out = tmp_path / "out.jsonl"
    session = negotiation.start(out=out)
    session.turn("Hello")
    assert out.read_text() == session.jsonl()


def test_ending_outcome_and_score(negotiation):
    script = (EXAMPLES / "scripts" / "used-car-good-deal.txt").read_text().splitlines()
    session, turns = play(negotiation, script=script)
    assert session.ended
    assert session.outcome == "success"
    assert session.score is not None
    with pytest.raises(troupe.TroupeError) as err:
        session.turn("one more")
    assert err.value.kind == "ended"


def test_a_turn_by_no_player_is_refused(negotiation):
    # Format 18.9: a turn is said by a player; the default seat's player is
    # `player` (18.4), the dealer `marco` is no player.
    session = negotiation.start()
    before = session.jsonl()
    for who in ["nobody", "marco"]:
        with pytest.raises(troupe.TroupeError) as err:
            session.turn("Hello", player=who)
        assert err.value.kind == "refused"
        assert "not a player" in str(err.value)
    assert session.jsonl() == before
    assert session.turn("Hello", player="player")["turn"] == 1


def test_fake_runtime_and_settings(negotiation):
    session = negotiation.start(runtime="fake")
    assert session.turn("hi")["messages"] == []
    hard = negotiation.start(difficulty="hard")
    assert hard.state["patience"] == 33
    with pytest.raises(troupe.TroupeError) as err:
        negotiation.start(difficulty="impossible")
    assert err.value.kind == "refused" and err.value.diagnostics
    with pytest.raises(troupe.TroupeError):
        negotiation.start(scenario="nope")
    with pytest.raises(troupe.TroupeError) as err:
        negotiation.start(runtime="gpt")
    assert err.value.kind == "refused"
    with pytest.raises(troupe.TroupeError):
        negotiation.start(runtime=42)


def test_history_answers_as_the_cli(harbor):
    history = harbor.history(INN.read_text())
    assert history.scenario == "harbor_lights"
    assert history.last_id == history.message_ids[-1]
    for mid in history.message_ids:
        assert history.state(mid) == cli_json("state", HARBOR, INN, "--at", mid)
        assert history.state_at(mid) == history.state(mid)["state"]
        assert history.ended_at(mid) == cli_json("ended", HARBOR, INN, "--at", mid)
        assert history.explain(mid) == cli_json("explain", HARBOR, INN, "--at", mid)
    assert history.knows("m2", part=0) == cli_json(
        "knows", HARBOR, INN, "--message", "m2", "--part", "0"
    )
    _, text = run_cli("render", HARBOR, "--text", "Hi {{user}}", "--session", INN, "--at", "m3", "--char", "mara")
    assert history.render("Hi {{user}}", at="m3", char="mara") == text.rstrip("\n")
    assert harbor.history_file(INN).message_ids == history.message_ids
    assert harbor.recorded == ["inn.jsonl", "keeper.jsonl", "walkthrough.jsonl"]
    assert harbor.recorded_history("inn.jsonl").state_at("m3") == history.state_at("m3")
    assert harbor.initial().state()["turn"] == 0
    assert "History" in repr(history)


def test_history_errors(harbor):
    history = harbor.history(INN.read_text())
    with pytest.raises(troupe.TroupeError) as err:
        history.state_at("m99")
    assert err.value.kind == "not_found"
    with pytest.raises(troupe.TroupeError) as err:
        history.render("{{oops")
    assert err.value.diagnostics[0]["code"] == "TEMPLATE_SYNTAX"
    with pytest.raises(troupe.TroupeError):
        history.knows("m2")
    with pytest.raises(troupe.TroupeError):
        history.knows("m2", part=99)
    with pytest.raises(troupe.TroupeError):
        harbor.recorded_history("none.jsonl")
    with pytest.raises(troupe.TroupeError):
        harbor.initial("nope")


def test_bundles_and_packages_from_memory(negotiation, tmp_path):
    data = negotiation.compile()
    assert isinstance(data, bytes)
    out = tmp_path / "p.troupe"
    code, _ = run_cli("compile", NEGOTIATION, "-o", out)
    assert code == 0 and out.read_bytes() == data
    from_bytes = troupe.Pack.from_package(data)
    assert from_bytes.from_ir and from_bytes.compile() == data
    assert troupe.Pack.open(out).from_ir
    from_text = troupe.Pack.from_bundle(json.dumps(negotiation.bundle))
    assert from_text.scenarios == negotiation.scenarios
    assert from_bytes.start().turn("Hello") == from_text.start().turn("Hello")


def test_check_test_and_cel_eval():
    doc = troupe.check(NEGOTIATION)
    assert doc == cli_json("check", NEGOTIATION)
    broken = EXAMPLES / "broken" / "cel-syntax.bundle.json"
    doc = troupe.check(broken)
    assert doc["valid"] is False and doc == cli_json("check", broken)
    assert troupe.check(broken, NEGOTIATION, strict=True)["errors"] >= 1
    assert troupe.check("no/such/path")["diagnostics"][0]["code"] == "MISSING_FILE"
    report = troupe.test(NEGOTIATION)
    assert report == cli_json("test", NEGOTIATION)
    assert report["status"] == "PASS"
    one = troupe.test(NEGOTIATION, test="smoke_used_car_negotiation")
    assert one == cli_json("test", NEGOTIATION, "--test", "smoke_used_car_negotiation")
    with pytest.raises(troupe.TroupeError) as err:
        troupe.test(NEGOTIATION, test="nope")
    assert err.value.kind == "not_found"
    with pytest.raises(troupe.TroupeError):
        troupe.test("no/such/pack")
    with pytest.raises(troupe.TroupeError):
        troupe.check()
    assert troupe.cel_eval("trust > 50 ? 'warm' : 'cold'", trust=60) == "warm"
    assert troupe.cel_eval("1 + 2") == 3
    assert troupe.cel_eval("xs.size() + m['a']", xs=[1, 2], m={"a": 1}) == 3
    assert troupe.cel_eval("x / 2.0", x=3.0) == 1.5
    assert troupe.cel_eval("[1, 2].map(v, v * 2)") == [2, 4]


def test_cel_eval_errors():
    with pytest.raises(troupe.TroupeError) as err:
        troupe.cel_eval("1 +")
    assert err.value.kind == "invalid"
    assert err.value.diagnostics[0]["code"] == "CEL_SYNTAX"
    with pytest.raises(troupe.TroupeError) as err:
        troupe.cel_eval("1 / x", x=0)
    assert err.value.kind == "evaluation"
    with pytest.raises(troupe.TroupeError):
        troupe.cel_eval("x", x=None)
    with pytest.raises(troupe.TroupeError):
        troupe.cel_eval("x", x=object())
    # Beyond int64 a JSON number is a double, as `--var x=…` reads it.
    assert troupe.cel_eval("x", x=2**80) == float(2**80)
    with pytest.raises(troupe.TroupeError):
        troupe.cel_eval("x", x=float("nan"))
    loop = []
    loop.append(loop)
    with pytest.raises(troupe.TroupeError):
        troupe.cel_eval("x", x=loop)


def test_change_settings_mid_session(negotiation):
    # Derived by hand (Format 8.9): on standard "Let me think about it." is
    # small talk (60 - 3); after the host switches to adversarial it is
    # stalling (57 - 10), and patience is not reset to the new knob.
    session = negotiation.start()
    assert session.turn("Let me think about it.")["rule"] == "small_talk"
    change = session.change_settings({"difficulty": "adversarial"})
    assert change == {"message": "m4", "firings": [], "ended": False, "outcome": None}
    assert session.state["patience"] == 57
    assert session.turn("Let me think about it.")["rule"] == "stalling"
    assert session.state["patience"] == 47
    before = session.jsonl()
    with pytest.raises(troupe.TroupeError) as err:
        session.change_settings({"knobs": {"speed": 1}})
    assert err.value.kind == "refused"
    assert err.value.diagnostics[0]["code"] == "SETTINGS_NOT_DECLARED"
    assert session.jsonl() == before
