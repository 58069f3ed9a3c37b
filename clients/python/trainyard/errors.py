"""Exceptions of the Trainyard client.

Every call that the server refuses raises a :class:`TrainyardError` (or a
subclass named after the gRPC status), never a bare ``grpc.RpcError``. A
request the server finds invalid raises :class:`InvalidArgument`, whose
``violations`` name each field that is wrong, as the REST API's 400 does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import grpc

from trainyard._proto.google.rpc import error_details_pb2, status_pb2

if TYPE_CHECKING:
    from trainyard._proto.trainyard.v1 import job_pb2


@dataclass(frozen=True)
class FieldViolation:
    """One problem with a request: the field (``spec.replicas[0].image``) and what is wrong."""

    field: str
    description: str

    def __str__(self) -> str:
        return f"{self.field}: {self.description}"


class TrainyardError(Exception):
    """The server refused a call, or could not be reached.

    Attributes:
        code: the gRPC status code.
        message: the server's message.
    """

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class InvalidArgument(TrainyardError):
    """The request is invalid. ``violations`` lists every problem, by field."""

    def __init__(self, code: grpc.StatusCode, message: str, violations: List[FieldViolation]) -> None:
        super().__init__(code, message)
        self.violations = violations

    def __str__(self) -> str:
        if not self.violations:
            return super().__str__()
        lines = "\n".join(f"  {v}" for v in self.violations)
        return f"{self.code.name}: the request is invalid:\n{lines}"


class Unauthenticated(TrainyardError):
    """No token, or one the server does not accept: run ``tyctl login`` or pass ``token=``."""


class PermissionDenied(TrainyardError):
    """The caller's role in the tenant does not allow the call."""


class NotFound(TrainyardError):
    """No such job or tenant (or none the caller may see)."""


class AlreadyExists(TrainyardError):
    """A job of that id exists already."""


class FailedPrecondition(TrainyardError):
    """The call does not fit the state of things (deleting a running job, a job bigger than the quota)."""


class Unavailable(TrainyardError):
    """The server, or its database, cannot be reached right now; safe to retry."""


class OutOfRange(TrainyardError):
    """A watch was resumed from a position older than the events the server
    keeps (event retention deleted some after it): nothing after it can be
    promised. Call :meth:`trainyard.Client.snapshot` again and watch from
    its position."""


class JobFailed(TrainyardError):
    """A job ended FAILED (raised by :meth:`trainyard.Client.wait`).

    Attributes:
        job: the job as it ended.
        reason: why, in one word (``BackoffLimitExceeded``, ``ReplicaFailed``).
        log_tail: the last log lines of the replicas that failed, as Trainyard kept them.
    """

    def __init__(self, job: "job_pb2.Job") -> None:
        st = job.status
        self.job = job
        self.reason = st.reason
        tails = []
        for r in st.replicas:
            t = r.last_termination
            if t.log_tail and t.exit_code != 0:
                tails.append(f"--- {_replica_name(r)} (exit code {t.exit_code}) ---\n{t.log_tail.rstrip()}")
        self.log_tail = "\n".join(tails)
        super().__init__(grpc.StatusCode.ABORTED, f"job {job.name} failed: {st.reason}: {st.message}")

    def __str__(self) -> str:
        s = f"job {self.job.name} failed: {self.reason}: {self.job.status.message}"
        return s + ("\n" + self.log_tail if self.log_tail else "")


class JobCancelled(TrainyardError):
    """A job ended CANCELLED while :meth:`trainyard.Client.wait` waited for it."""

    def __init__(self, job: "job_pb2.Job") -> None:
        self.job = job
        super().__init__(grpc.StatusCode.CANCELLED, f"job {job.name} was cancelled")


def _replica_name(r: "job_pb2.ReplicaStatus") -> str:
    from trainyard._proto.trainyard.v1 import job_pb2

    kind: str = job_pb2.ReplicaType.Name(r.type)
    return kind.removeprefix("REPLICA_TYPE_").lower() + f"-{r.index}"


_BY_CODE = {
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRange,
}


def from_rpc_error(err: grpc.RpcError) -> TrainyardError:
    """Turns a gRPC error into the matching exception, with its field violations."""
    code: grpc.StatusCode = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message: str = err.details() if hasattr(err, "details") else str(err)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidArgument(code, message or "", _violations(err))
    return _BY_CODE.get(code, TrainyardError)(code, message or "")


def _violations(err: grpc.RpcError) -> List[FieldViolation]:
    """Reads google.rpc.BadRequest from the status details the server attached."""
    details: Optional[bytes] = None
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == "grpc-status-details-bin":
            details = value
    if details is None:
        return []
    st = status_pb2.Status()
    st.ParseFromString(details)
    out: List[FieldViolation] = []
    for any_detail in st.details:
        br = error_details_pb2.BadRequest()
        if any_detail.Unpack(br):
            out.extend(FieldViolation(v.field, v.description) for v in br.field_violations)
    return out
