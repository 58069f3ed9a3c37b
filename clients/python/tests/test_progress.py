"""What Client.wait shows: one line per change, kept current in place."""

from __future__ import annotations

import io
import sys
import types
from typing import Any, List, Optional

import pytest

from trainyard import _progress
from trainyard._proto.trainyard.v1 import job_pb2


def _job(state: "job_pb2.JobState", active: int) -> job_pb2.Job:
    j = job_pb2.Job(name="tenants/t/jobs/mnist")
    j.status.state = state
    j.status.replica_counts.add(type=job_pb2.REPLICA_TYPE_WORKER, active=active, pending=2 - active)
    return j


class Handle:
    """A Jupyter display handle: what it was last shown."""

    def __init__(self) -> None:
        self.shown: List[Any] = []

    def update(self, obj: Any) -> None:
        self.shown.append(obj)


@pytest.fixture
def ipython(monkeypatch: pytest.MonkeyPatch) -> Any:
    """ipython(kernel) installs a fake IPython (with a Jupyter kernel or
    without) for the test and returns its display handle."""

    def install(kernel: bool) -> Handle:
        handle = Handle()
        shell = types.SimpleNamespace(kernel=object()) if kernel else types.SimpleNamespace()
        mod: Any = types.ModuleType("IPython")
        mod.get_ipython = lambda: shell
        display: Any = types.ModuleType("IPython.display")

        def show(obj: Any, display_id: Optional[str] = None) -> Handle:
            assert display_id
            handle.update(obj)
            return handle

        display.display = show
        monkeypatch.setitem(sys.modules, "IPython", mod)
        monkeypatch.setitem(sys.modules, "IPython.display", display)
        return handle

    return install


def test_jupyter_updates_one_display(ipython: Any) -> None:
    handle = ipython(kernel=True)
    out = io.StringIO()
    p = _progress.Progress(out=out)
    p.update(_job(job_pb2.JOB_STATE_STARTING, 0))
    p.update(_job(job_pb2.JOB_STATE_STARTING, 0))  # unchanged: not shown again
    p.update(_job(job_pb2.JOB_STATE_RUNNING, 2))
    p.close()
    assert handle.shown == ["", "mnist: STARTING  worker 0/2", "mnist: RUNNING  worker 2/2"]
    assert out.getvalue() == "", "nothing printed beside the display"


def test_ipython_without_a_kernel_prints_lines(ipython: Any) -> None:
    ipython(kernel=False)  # a terminal IPython: no display to update
    out = io.StringIO()
    p = _progress.Progress(out=out)
    p.update(_job(job_pb2.JOB_STATE_QUEUED, 0))
    p.update(_job(job_pb2.JOB_STATE_SUCCEEDED, 2))
    assert out.getvalue() == "mnist: QUEUED  worker 0/2\nmnist: SUCCEEDED  worker 2/2\n"


def test_terminal_rewrites_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    p = _progress.Progress(out=out)
    p.update(_job(job_pb2.JOB_STATE_STARTING, 1))
    p.update(_job(job_pb2.JOB_STATE_RUNNING, 2))
    p.close()
    assert out.getvalue() == "\r\x1b[Kmnist: STARTING  worker 1/2\r\x1b[Kmnist: RUNNING  worker 2/2\n"


def test_disabled_shows_nothing(ipython: Any) -> None:
    handle = ipython(kernel=True)
    out = io.StringIO()
    p = _progress.Progress(enabled=False, out=out)
    p.update(_job(job_pb2.JOB_STATE_RUNNING, 2))
    p.close()
    assert (handle.shown, out.getvalue()) == ([], "")
