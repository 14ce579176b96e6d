"""Turns per second and history `state_at` queries per second from Python,
beside the same loops run in Rust alone, in one process (docs/performance.md):

    python bindings/python/bench.py [ROUNDS]

The Rust figures come from `troupe._troupe._bench_turns/_bench_state_at`,
the same API calls without converting results to Python; the ratio is the
binding's overhead per call. Build the binding with `maturin develop
--release` first for figures worth comparing with `cargo bench`.
"""

import pathlib
import sys
import time

import troupe
from troupe import _troupe

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACK = ROOT / "examples" / "packs" / "everyday-negotiation"
SCRIPT = (ROOT / "examples" / "scripts" / "used-car-good-deal.txt").read_text().splitlines()


def python_turns(pack, rounds):
    start = time.perf_counter()
    turns = 0
    for seed in range(rounds):
        session = pack.start(seed=seed)
        for line in SCRIPT:
            if session.ended:
                break
            session.turn(line)
            turns += 1
    return turns, time.perf_counter() - start


def python_state_at(history, rounds):
    ids = history.message_ids
    start = time.perf_counter()
    n = 0
    for _ in range(rounds):
        for mid in ids:
            history.state_at(mid)
            n += 1
    return n, time.perf_counter() - start


def best(f, *args, repeat=5):
    """The fastest of `repeat` runs: (count, seconds)."""
    return min((f(*args) for _ in range(repeat)), key=lambda r: r[1] / max(r[0], 1))


def main(rounds=200):
    pack = troupe.Pack.open(PACK)
    session = pack.start()
    for line in SCRIPT:
        session.turn(line)
    history = pack.history(session.jsonl())
    rows = [
        ("turn", best(_troupe._bench_turns, pack, SCRIPT, rounds), best(python_turns, pack, rounds)),
        ("state_at", best(_troupe._bench_state_at, history, rounds), best(python_state_at, history, rounds)),
    ]
    for name, (rn, rs), (pn, ps) in rows:
        assert rn == pn, (rn, pn)
        rust, py = rn / rs, pn / ps
        print(f"{name:9} rust {rust:12,.0f}/s  python {py:12,.0f}/s  python/rust time {rust / py:5.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
