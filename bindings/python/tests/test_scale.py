"""Determinism, pickling and threads."""

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import troupe
from conftest import SCRIPT


def run(pack, seed):
    session = pack.start(seed=seed)
    for line in SCRIPT:
        if session.ended:
            break
        session.turn(line)
    return session.jsonl()


def test_two_runs_give_the_same_bytes(negotiation):
    assert run(negotiation, 5) == run(negotiation, 5)
    again = troupe.Pack.open(negotiation.name)
    assert run(again, 5) == run(negotiation, 5)


def test_pack_pickles_as_its_package(negotiation):
    data = pickle.dumps(negotiation)
    back = pickle.loads(data)
    assert isinstance(back, troupe.Pack)
    assert back.from_ir
    assert back.compile() == negotiation.compile()
    assert back.scenarios == negotiation.scenarios
    assert run(back, 2) == run(negotiation, 2)


def test_sessions_from_threads_equal_a_sequential_run(negotiation):
    seeds = list(range(8))
    sequential = [run(negotiation, s) for s in seeds]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda s: run(negotiation, s), seeds))
    assert threaded == sequential


def test_one_session_shared_by_threads(negotiation):
    session = negotiation.start()
    errors = []

    def step():
        try:
            session.turn("Hello")
            session.undo()
        except troupe.TroupeError as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=step) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert session.history().message_ids  # the session file is whole


def test_hooks_from_threads(negotiation):
    def model(ctx):
        return {"reply": ctx["input"].upper(), "changes": [{"add": {"impression": 1}}]}

    def play(seed):
        s = negotiation.start(seed=seed, runtime=model)
        for line in SCRIPT:
            s.turn(line)
        return s.jsonl()

    sequential = [play(s) for s in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(play, range(4))) == sequential


def test_reading_a_session_while_its_hook_runs(negotiation):
    started, release = threading.Event(), threading.Event()

    def model(ctx):
        started.set()
        release.wait(30)
        return {"reply": "ok"}

    session = negotiation.start(runtime=model)
    turner = threading.Thread(target=session.turn, args=("hi",))
    turner.start()
    assert started.wait(30)
    seen = {}
    reader = threading.Thread(target=lambda: seen.setdefault("state", session.state))
    reader.start()
    # The reader waits for the turn with the GIL released, so this thread
    # still runs and the hook can finish.
    release.set()
    turner.join(30)
    reader.join(30)
    assert not turner.is_alive() and not reader.is_alive()
    assert seen["state"] == session.state
