"""Watches against an in-process JobService: a watch (a tenant's, a job's)
asks for bookmarks and reopens after the latest one; wait() outlives a
resume the server refuses, where watch() raises it."""

from __future__ import annotations

from typing import Callable

import grpc
import pytest

import trainyard
from trainyard._proto.trainyard.v1 import job_pb2
from trainyard.errors import OutOfRange

from conftest import ScriptedJobs

Serve = Callable[[ScriptedJobs], trainyard.Client]


def _job(state: "job_pb2.JobState") -> job_pb2.Job:
    return job_pb2.Job(name="tenants/ml/jobs/j", status=job_pb2.JobStatus(state=state))


@pytest.mark.usefixtures("no_backoff")
def test_a_resume_starts_after_the_bookmark(serve: Serve) -> None:
    job = job_pb2.Job(name="tenants/ml/jobs/j", labels={"team": "nlp"})
    event = job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=41, reason="Running"), job=job)
    later = job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=950, reason="Succeeded"), job=job)
    jobs = ScriptedJobs([], [
        ([event, job_pb2.WatchJobResponse(bookmark_event_id=900)], (grpc.StatusCode.UNAVAILABLE, "stream lifetime reached")),
        ([later], (grpc.StatusCode.PERMISSION_DENIED, "no longer a member")),
    ])
    got = []
    with serve(jobs) as c, pytest.raises(trainyard.PermissionDenied):
        for msg in c.watch(filter="labels.team = nlp", after_event_id=40):
            got.append(msg.event.id)
    assert got == [41, 950], "events only"
    assert jobs.afters == [40, 900], "reopened after the bookmark"
    assert all(r.bookmarks for r in jobs.requests)


@pytest.mark.usefixtures("no_backoff")
def test_a_job_watch_resumes_after_the_bookmark(serve: Serve) -> None:
    """A quiet job's watch moves with the tenant's position, so a resume
    stays within what event retention keeps."""
    jobs = ScriptedJobs([], [
        ([job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=41, reason="JobRunning"), job=_job(job_pb2.JOB_STATE_RUNNING)),
          job_pb2.WatchJobResponse(bookmark_event_id=900)], (grpc.StatusCode.UNAVAILABLE, "stream lifetime reached")),
        ([job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=950, reason="JobSucceeded"), job=_job(job_pb2.JOB_STATE_SUCCEEDED))], None),
    ])
    with serve(jobs) as c:
        got = [msg.event.id for msg in c.watch("j", after_event_id=40)]
    assert got == [41, 950], "events only, and the watch ends with the job"
    assert jobs.afters == [40, 900], "reopened after the bookmark"
    assert all(r.bookmarks for r in jobs.requests)


@pytest.mark.usefixtures("no_backoff")
def test_wait_watches_afresh_after_a_resume_behind_retention(serve: Serve) -> None:
    running, done = _job(job_pb2.JOB_STATE_RUNNING), _job(job_pb2.JOB_STATE_SUCCEEDED)
    event = job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=41, reason="Running"), job=running)
    jobs = ScriptedJobs([running, done], [
        ([job_pb2.WatchJobResponse(job=running), event], (grpc.StatusCode.UNAVAILABLE, "server shutting down")),
        ([], (grpc.StatusCode.OUT_OF_RANGE, "afterEventId: events up to position 60 were deleted by event retention")),
        ([job_pb2.WatchJobResponse(job=done)], None),
    ])
    with serve(jobs) as c:
        final = c.wait("j", timeout=30, progress=False)
    assert jobs.afters == [0, 41, 0], "resumed after the last event, then afresh"
    assert final.status.state == job_pb2.JOB_STATE_SUCCEEDED


def test_a_plain_watch_still_raises(serve: Serve) -> None:
    jobs = ScriptedJobs([], [([], (grpc.StatusCode.OUT_OF_RANGE, "afterEventId: gone"))])
    with serve(jobs) as c, pytest.raises(OutOfRange):
        list(c.watch("j", after_event_id=7))
