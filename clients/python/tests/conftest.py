"""Fixtures shared by the client's offline tests: an in-process JobService
that plays a script per watch call, a client of it, and no backoff sleeps.

The package is imported from clients/python (pyproject's pytest
``pythonpath``), as it would be once installed.
"""

from __future__ import annotations

from concurrent import futures
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import grpc
import pytest

import trainyard
from trainyard import client as client_mod
from trainyard._proto.trainyard.v1 import job_pb2, job_pb2_grpc

# What one watch call sends, then how it ends (a status code and message),
# or None for a stream that ends cleanly.
Script = Tuple[Sequence[job_pb2.WatchJobResponse], Optional[Tuple[grpc.StatusCode, str]]]


class ScriptedJobs(job_pb2_grpc.JobServiceServicer):
    """A JobService whose GetJob returns gets in turn and whose WatchJob
    and WatchJobs play one script per call."""

    def __init__(self, gets: List[job_pb2.Job], scripts: List[Script]) -> None:
        self.gets, self.scripts = gets, scripts
        self.afters: List[int] = []
        self.requests: List[Any] = []

    def GetJob(self, request: job_pb2.GetJobRequest, context: grpc.ServicerContext) -> job_pb2.Job:
        return self.gets.pop(0)

    def WatchJob(self, request: job_pb2.WatchJobRequest, context: grpc.ServicerContext) -> Iterator[job_pb2.WatchJobResponse]:
        yield from self._play(request, context)

    def WatchJobs(self, request: job_pb2.WatchJobsRequest, context: grpc.ServicerContext) -> Iterator[job_pb2.WatchJobResponse]:
        yield from self._play(request, context)

    def _play(self, request: Any, context: grpc.ServicerContext) -> Iterator[job_pb2.WatchJobResponse]:
        self.afters.append(request.after_event_id)
        self.requests.append(request)
        send, end = self.scripts[len(self.afters) - 1]
        yield from send
        if end is not None:
            context.abort(*end)


@pytest.fixture
def serve() -> Iterator[Callable[[ScriptedJobs], trainyard.Client]]:
    """serve(jobs) returns a client of jobs served in-process; the servers
    stop when the test ends."""
    servers: List[Any] = []

    def start(jobs: ScriptedJobs) -> trainyard.Client:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        job_pb2_grpc.add_JobServiceServicer_to_server(jobs, server)  # type: ignore[no-untyped-call]
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)

    yield start
    for s in servers:
        s.stop(None)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client reconnects at once instead of backing off."""
    monkeypatch.setattr(client_mod.time, "sleep", lambda _: None)  # type: ignore[attr-defined]
