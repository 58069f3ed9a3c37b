"""gRPC errors become the client's exceptions, with their field violations."""

from __future__ import annotations

from typing import Sequence, Tuple

import grpc

from trainyard._proto.google.rpc import error_details_pb2, status_pb2
from trainyard.errors import InvalidArgument, NotFound, OutOfRange, from_rpc_error


class FakeRpcError(grpc.RpcError):  # type: ignore[misc]  # grpc is untyped
    def __init__(self, code: grpc.StatusCode, details: str, trailers: Sequence[Tuple[str, bytes]] = ()) -> None:
        self._code, self._details, self._trailers = code, details, trailers

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Sequence[Tuple[str, bytes]]:
        return self._trailers


def test_violations_from_status_details() -> None:
    st = status_pb2.Status(code=3, message="invalid")
    st.details.add().Pack(error_details_pb2.BadRequest(field_violations=[
        error_details_pb2.BadRequest.FieldViolation(field="spec.replicas[0].count", description="0 is out of range 1..1000")]))
    err = from_rpc_error(FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, "invalid", (("grpc-status-details-bin", st.SerializeToString()),)))
    assert isinstance(err, InvalidArgument)
    assert [(v.field, v.description) for v in err.violations] == [("spec.replicas[0].count", "0 is out of range 1..1000")]
    assert "spec.replicas[0].count" in str(err)


def test_codes() -> None:
    assert isinstance(from_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no job")), NotFound)
    assert isinstance(from_rpc_error(FakeRpcError(grpc.StatusCode.OUT_OF_RANGE, "afterEventId: too old")), OutOfRange)
