"""The batch example (examples/python/corpus.py) on a local Dask cluster
equals the sequential run."""

import os
import sys

import pytest

from conftest import ROOT

if not os.environ.get("CI"):
    pytest.importorskip("distributed")

sys.path.insert(0, str(ROOT / "examples" / "python"))
import corpus  # noqa: E402


def test_corpus_job_on_a_local_cluster_equals_sequential(negotiation):
    from distributed import Client, LocalCluster

    texts = corpus.generate_corpus(negotiation, 12)
    assert len(set(texts)) == 12
    sequential = corpus.run_sequential(negotiation, texts)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        distributed = corpus.run_on_dask(client, negotiation, texts)
    assert distributed == sequential
    outcomes = {r["ended"]["outcome"] for r in sequential}
    assert {"success", "failure", None} <= outcomes


def test_corpus_main_reports_equal(capsys):
    assert corpus.main(6) == 0
    assert "cluster equals sequential run: True" in capsys.readouterr().out
