"""suspend and resume call SuspendJob and ResumeJob with the job's name."""

from __future__ import annotations

from typing import Callable, List

import grpc

import trainyard
from trainyard._proto.trainyard.v1 import job_pb2

from conftest import ScriptedJobs


class SuspendingJobs(ScriptedJobs):
    def __init__(self) -> None:
        super().__init__([], [])
        self.names: List[str] = []

    def SuspendJob(self, request: job_pb2.SuspendJobRequest, context: grpc.ServicerContext) -> job_pb2.Job:
        self.names.append("suspend " + request.name)
        return job_pb2.Job(name=request.name, status=job_pb2.JobStatus(
            state=job_pb2.JOB_STATE_RUNNING, suspend_requested=True, restarts=2))

    def ResumeJob(self, request: job_pb2.ResumeJobRequest, context: grpc.ServicerContext) -> job_pb2.Job:
        self.names.append("resume " + request.name)
        return job_pb2.Job(name=request.name, status=job_pb2.JobStatus(state=job_pb2.JOB_STATE_QUEUED, restarts=2))


def test_suspend_and_resume(serve: Callable[[ScriptedJobs], trainyard.Client]) -> None:
    jobs = SuspendingJobs()
    client = serve(jobs)
    j = client.suspend("mnist")
    assert j.status.suspend_requested
    j = client.resume("mnist")
    assert j.status.state == job_pb2.JOB_STATE_QUEUED
    assert j.status.restarts == 2
    assert jobs.names == ["suspend tenants/ml/jobs/mnist", "resume tenants/ml/jobs/mnist"]
