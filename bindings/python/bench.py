"""Turns per second (sessions started in the loop, and started beforehand)
and history `state_at` queries per second from Python,
beside the same loops run in Rust alone, in one process (docs/performance.md):

    python -P bindings/python/bench.py [ROUNDS]   # from the repository's root

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


def play(session):
    """The script as turns until the session ends; how many were played."""
    turns = 0
    for line in SCRIPT:
        if session.ended:
            break
        session.turn(line)
        turns += 1
    return turns


def python_turns(pack, rounds):
    start = time.perf_counter()
    turns = sum(play(pack.start(seed=seed)) for seed in range(rounds))
    return turns, time.perf_counter() - start


def python_turns_only(pack, rounds):
    """`python_turns` with the sessions started before the clock starts."""
    sessions = [pack.start(seed=seed) for seed in range(rounds)]
    start = time.perf_counter()
    turns = sum(play(session) for session in sessions)
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


def paired(rust, python, repeat=7):
    """The fastest of `repeat` runs of each, the two run alternately so that
    both see the same load on a shared machine: ((count, s), (count, s))."""
    rs, ps = [], []
    for _ in range(repeat):
        rs.append(rust())
        ps.append(python())
    fastest = lambda runs: min(runs, key=lambda r: r[1] / max(r[0], 1))
    return fastest(rs), fastest(ps)


def main(rounds=200):
    pack = troupe.Pack.open(PACK)
    session = pack.start()
    for line in SCRIPT:
        session.turn(line)
    history = pack.history(session.jsonl())
    rows = [
        ("turn", *paired(lambda: _troupe._bench_turns(pack, SCRIPT, rounds),
                         lambda: python_turns(pack, rounds))),
        ("turn-only", *paired(lambda: _troupe._bench_turns_only(pack, SCRIPT, rounds),
                              lambda: python_turns_only(pack, rounds))),
        ("state_at", *paired(lambda: _troupe._bench_state_at(history, rounds),
                             lambda: python_state_at(history, rounds))),
    ]
    rates = {}
    for name, (rn, rs), (pn, ps) in rows:
        assert rn == pn, (rn, pn)
        rust, py = rn / rs, pn / ps
        rates[name] = (rust, py)
        print(f"{name:9} rust {rust:12,.0f}/s  python {py:12,.0f}/s  python/rust time {rust / py:5.2f}x")
    # Issue 41 item 4: a start costs little beside the turns it serves.
    (rs, ps), (ro, po) = rates["turn"], rates["turn-only"]
    print(f"start included / turns only: rust {rs / ro:.0%}  python {ps / po:.0%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
