"""Progress of a job while Client.wait waits: one line, kept current.

In Jupyter (IPython with a kernel) the line is a display that updates in
place; in a terminal it is rewritten with a carriage return; anywhere else
(a log file, CI) a line is printed each time it changes.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from trainyard._proto.trainyard.v1 import job_pb2


def describe(job: job_pb2.Job) -> str:
    """STATE and replicas, as tyctl shows them: ``RUNNING  chief 1/1, worker 2/2  restarts 0``."""
    st = job.status
    state = job_pb2.JobState.Name(st.state).removeprefix("JOB_STATE_")
    parts = []
    for c in st.replica_counts:
        t = job_pb2.ReplicaType.Name(c.type).removeprefix("REPLICA_TYPE_").lower()
        total = c.pending + c.active + c.succeeded + c.failed
        parts.append(f"{t} {c.active + c.succeeded}/{total}")
    line = f"{job.name.rsplit('/', 1)[-1]}: {state}"
    if parts:
        line += "  " + ", ".join(parts)
    if st.restarts:
        line += f"  restarts {st.restarts}"
    if st.state == job_pb2.JOB_STATE_QUEUED and st.queue.message:
        line += f"  ({st.queue.message})"
    elif st.reason:
        line += f"  ({st.reason})"
    return line


class Progress:
    def __init__(self, enabled: bool = True, out: Any = None) -> None:
        self.enabled = enabled
        self.out = out or sys.stderr
        self.last: Optional[str] = None
        self.handle = _jupyter_display() if enabled else None
        self.tty = enabled and self.handle is None and hasattr(self.out, "isatty") and self.out.isatty()

    def update(self, job: job_pb2.Job) -> None:
        if not self.enabled:
            return
        line = describe(job)
        if line == self.last:
            return
        self.last = line
        if self.handle is not None:
            self.handle.update(line)
        elif self.tty:
            self.out.write("\r\x1b[K" + line)
            self.out.flush()
        else:
            print(line, file=self.out, flush=True)

    def close(self) -> None:
        if self.tty and self.last is not None:
            self.out.write("\n")
            self.out.flush()


def _jupyter_display() -> Any:
    """An updatable display when running in a Jupyter kernel, else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        if shell is None or not hasattr(shell, "kernel"):
            return None
        from IPython.display import display

        return display("", display_id=True)
    except Exception:  # any IPython trouble: fall back to plain lines
        return None
