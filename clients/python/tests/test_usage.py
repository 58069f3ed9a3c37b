"""usage returns the ledger's rows as plain dicts, the CSV's columns."""

from __future__ import annotations

from concurrent import futures
from datetime import datetime, timezone
from typing import Any, List

import grpc

import trainyard
from trainyard._proto.trainyard.v1 import usage_pb2, usage_pb2_grpc


class Usage(usage_pb2_grpc.UsageServiceServicer):
    def __init__(self) -> None:
        self.requests: List[usage_pb2.QueryUsageRequest] = []

    def QueryUsage(self, request: usage_pb2.QueryUsageRequest, context: grpc.ServicerContext) -> usage_pb2.QueryUsageResponse:
        self.requests.append(request)
        resp = usage_pb2.QueryUsageResponse(step="1d", group_by=request.group_by)
        row = resp.rows.add(tenant="ml", creator="alice", gpu_hours=12.5, cpu_hours=3.0, memory_gib_hours=0.25)
        row.labels["team"] = "vision"
        row.start.FromDatetime(datetime(2026, 12, 1, tzinfo=timezone.utc))
        row.end.FromDatetime(datetime(2026, 12, 2, tzinfo=timezone.utc))
        return resp


def test_usage_rows() -> None:
    svc = Usage()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    usage_pb2_grpc.add_UsageServiceServicer_to_server(svc, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        client = trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)
        rows: List[Any] = client.usage(datetime(2026, 12, 1), group_by="creator,label:team", step="1d")
        assert rows == [{
            "start": datetime(2026, 12, 1, tzinfo=timezone.utc), "end": datetime(2026, 12, 2, tzinfo=timezone.utc),
            "tenant": "ml", "creator": "alice", "label:team": "vision",
            "gpuHours": 12.5, "cpuHours": 3.0, "memoryGibHours": 0.25, "gpuHoursUsed": 0.0,
        }]
        req = svc.requests[0]
        assert req.parent == "tenants/ml"
        assert req.start.ToDatetime(tzinfo=timezone.utc) == datetime(2026, 12, 1, tzinfo=timezone.utc)
        assert not req.HasField("end")
        client.usage(all_tenants=True)
        assert svc.requests[1].parent == "tenants/-"
        assert svc.requests[1].step == "1h"
    finally:
        server.stop(None)
