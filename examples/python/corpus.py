"""A corpus job on Dask distributed: replay many recorded sessions and ask
each for its state and ending, on a LocalCluster here and the same code on a
real cluster (docs/python.md, "Batch runs").

Sessions are independent, so the job is a map over the corpus; the pack is
shared read-only: it is scattered once to every worker (it pickles as its
compiled package, so workers open it without checking again).

    python examples/python/corpus.py [N]   # N generated sessions (default 40)

prints one line per session and whether the cluster's results equal a
sequential run.
"""

import pathlib
import sys

import troupe

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACK = ROOT / "examples" / "packs" / "everyday-negotiation"

LINES = [
    "Hello Marco, I like the hatchback.",
    "It's a lovely car.",
    "Could I see the service book? Similar hatchbacks are listed for less.",
    "I can offer 7,000 cash today.",
    "I can offer 8,500 today, paid in full.",
    "This is a waste of time.",
    "Let's shake on it and sign the paperwork.",
    "What about the mileage?",
]


GOOD_DEAL = (ROOT / "examples" / "scripts" / "used-car-good-deal.txt").read_text().splitlines()
WALKOUT = ["This is a waste of time."] * 4


def generate_corpus(pack, n):
    """`n` recorded sessions (JSONL texts), session i with seed i and a
    script by i % 3: the good deal (ends in success), the walkout (patience
    runs out: failure), or 3 + i % 5 lines of LINES from line i % 8."""
    corpus = []
    for i in range(n):
        script = [GOOD_DEAL, WALKOUT][i % 3] if i % 3 < 2 else [
            LINES[(i + k) % len(LINES)] for k in range(3 + i % 5)
        ]
        session = pack.start(seed=i)
        for line in script:
            if session.ended:
                break
            session.turn(line)
        corpus.append(session.jsonl())
    return corpus


def summarize(pack, jsonl):
    """What the job asks of one recorded session: its last message, the
    state there, whether and how the story ended, and the deal progress at
    every message (a state query per message)."""
    history = pack.history(jsonl)
    last = history.last_id
    return {
        "last": last,
        "state": history.state_at(last),
        "ended": history.ended_at(last),
        "progress": [history.state_at(m)["deal_progress"] for m in history.message_ids],
    }


def run_sequential(pack, corpus):
    """The job in this process, one session after the other."""
    return [summarize(pack, text) for text in corpus]


def run_on_dask(client, pack, corpus):
    """The job on a Dask cluster: the pack scattered once to every worker,
    one task per session, results in corpus order."""
    shared = client.scatter(pack, broadcast=True)
    futures = client.map(summarize, [shared] * len(corpus), corpus, pure=False)
    return client.gather(futures)


def main(n=40):
    from distributed import Client, LocalCluster

    pack = troupe.Pack.open(PACK)
    corpus = generate_corpus(pack, n)
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        distributed = run_on_dask(client, pack, corpus)
    sequential = run_sequential(pack, corpus)
    for i, r in enumerate(distributed):
        outcome = r["ended"]["outcome"] or ("ended" if r["ended"]["ended"] else "open")
        print(f"session {i:3}: {len(r['progress']):2} messages, deal {r['state']['deal_progress']:3}, {outcome}")
    same = distributed == sequential
    print(f"{len(corpus)} sessions; cluster equals sequential run: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 40))
