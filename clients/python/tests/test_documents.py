"""Job documents: dicts, files and TFJobs, read as tyctl reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainyard import _documents
from trainyard._proto.trainyard.v1 import job_pb2

REPO = Path(__file__).resolve().parents[3]


def test_spec_dict_with_short_enums() -> None:
    kind, job = _documents.load({"replicas": [{"type": "worker", "count": 2, "image": "tf", "restartPolicy": "OnFailure"}],
                                 "successPolicy": "AllWorkers"})
    assert kind == "job"
    r = job.spec.replicas[0]
    assert r.type == job_pb2.REPLICA_TYPE_WORKER
    assert r.restart_policy == job_pb2.RESTART_POLICY_ON_FAILURE
    assert job.spec.success_policy == job_pb2.SUCCESS_POLICY_ALL_WORKERS


def test_job_resource_and_file(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_text("labels: {team: nlp}\nspec:\n  replicas:\n  - {type: CHIEF, image: tf}\n")
    kind, job = _documents.load(str(f))
    assert job.labels["team"] == "nlp"
    assert job.spec.replicas[0].type == job_pb2.REPLICA_TYPE_CHIEF


def test_the_example_job_file() -> None:
    kind, job = _documents.load(str(REPO / "cmd" / "tyctl" / "examples" / "mnist.yaml"))
    assert job.spec.replicas[0].args[1] == "10", "numbers where strings are due become strings, as in tyctl"
    assert len(job.spec.replicas) == 3


def test_tfjob_goes_as_it_is() -> None:
    kind, s = _documents.load({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}})
    assert kind == "tfjob"
    assert s["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2


def test_other_kinds_are_refused() -> None:
    with pytest.raises(ValueError):
        _documents.load({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"})


def test_a_typo_names_the_field() -> None:
    with pytest.raises(Exception, match="gpus"):
        _documents.load({"replicas": [{"type": "WORKER", "gpus": 4}]})


def test_directory_and_multi_document_file(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("name: b0\nspec: {replicas: [{type: worker, image: tf}]}\n---\n---\nreplicas: [{type: chief, image: tf}]\n")
    (tmp_path / "a.json").write_text('{"spec": {"replicas": [{"type": "WORKER", "image": "tf"}]}}')
    (tmp_path / "notes.txt").write_text("not a job")
    docs = _documents.read_many(str(tmp_path))
    assert len(docs) == 3
    assert docs[1]["name"] == "b0"
    assert len(_documents.read_many(str(tmp_path / "b.yaml"))) == 2
