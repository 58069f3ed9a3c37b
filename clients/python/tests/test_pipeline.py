"""Pipelines: outputs written as a termination message, dependencies read
from the environment a dependent's pods get, and a chain submitted as one
batch in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, List

import grpc
import pytest

import trainyard
from trainyard import pipeline
from trainyard._proto.trainyard.v1 import job_pb2

from conftest import ScriptedJobs


def test_set_outputs_writes_json(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    pipeline.set_outputs(str(log), dataset="gs://d/7", rows=60000)
    assert json.loads(log.read_text()) == {"dataset": "gs://d/7", "rows": "60000"}
    with pytest.raises(ValueError, match="4096"):
        pipeline.set_outputs(str(log), big="x" * 5000)


def test_dependencies_from_env() -> None:
    env = {"TRAINYARD_DEPENDENCIES": json.dumps([
        {"job": "prep", "condition": "SUCCEEDED", "state": "SUCCEEDED", "reason": "JobSucceeded",
         "exitCodes": {"chief-0": 0}, "outputs": {"dataset": "gs://d/7"}},
        {"job": "train", "condition": "STARTED", "state": "RUNNING"},
    ])}
    deps = pipeline.dependencies(env)
    assert deps["prep"].outputs == {"dataset": "gs://d/7"}
    assert deps["prep"].exit_codes == {"chief-0": 0}
    assert deps["train"].state == "RUNNING"
    assert deps["train"].outputs == {}
    assert pipeline.dependencies({}) == {}


class BatchJobs(ScriptedJobs):
    def __init__(self) -> None:
        super().__init__([], [])
        self.batches: List[job_pb2.BatchCreateJobsRequest] = []

    def ParseJobFile(self, request: job_pb2.ParseJobFileRequest, context: grpc.ServicerContext) -> job_pb2.ParseJobFileResponse:
        jobs = []
        for doc in request.content.split("---"):
            name = doc.split("name:", 1)[1].split()[0]
            j = job_pb2.Job(name=name)
            if "dependsOn" in doc:
                j.spec.depends_on.add(job=doc.split("job:", 1)[1].split()[0],
                                      condition=job_pb2.DEPENDENCY_CONDITION_STARTED if "STARTED" in doc else 0)
            jobs.append(j)
        return job_pb2.ParseJobFileResponse(jobs=jobs)

    def BatchCreateJobs(self, request: job_pb2.BatchCreateJobsRequest, context: grpc.ServicerContext) -> job_pb2.BatchCreateJobsResponse:
        self.batches.append(request)
        return job_pb2.BatchCreateJobsResponse(jobs=[job_pb2.Job(name=f"tenants/ml/jobs/{r.job_id}", spec=r.job.spec)
                                                     for r in request.requests])


def test_submit_many_sends_a_chain_in_order(serve: Callable[[ScriptedJobs], trainyard.Client]) -> None:
    jobs = BatchJobs()
    client = serve(jobs)
    text = "name: prep\n---\nname: train\ndependsOn:\n- job: prep\n---\nname: eval\ndependsOn:\n- job: train\n  condition: STARTED\n"
    out = client.submit_many(text, request_id="run-1")
    assert [j.name for j in out] == ["tenants/ml/jobs/prep", "tenants/ml/jobs/train", "tenants/ml/jobs/eval"]
    assert len(jobs.batches) == 1, "one batch: all or nothing"
    reqs = jobs.batches[0].requests
    assert [r.job_id for r in reqs] == ["prep", "train", "eval"]
    assert reqs[2].job.spec.depends_on[0].job == "train"
    assert reqs[2].job.spec.depends_on[0].condition == job_pb2.DEPENDENCY_CONDITION_STARTED
