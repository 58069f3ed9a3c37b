"""usage, queue_history and job_utilization return plain dicts that
pandas.DataFrame takes as is."""

from __future__ import annotations

from concurrent import futures
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, List, Tuple

import grpc
import pytest

import trainyard
from trainyard._proto.trainyard.v1 import usage_pb2, usage_pb2_grpc


class Usage(usage_pb2_grpc.UsageServiceServicer):
    def __init__(self, available: bool = True) -> None:
        self.requests: List[Any] = []
        self.available = available

    def QueryUsage(self, request: usage_pb2.QueryUsageRequest, context: grpc.ServicerContext) -> usage_pb2.QueryUsageResponse:
        self.requests.append(request)
        resp = usage_pb2.QueryUsageResponse(step="1d", group_by=request.group_by)
        row = resp.rows.add(tenant="ml", creator="alice", gpu_hours=12.5, cpu_hours=3.0, memory_gib_hours=0.25,
                              gpu_hours_used=0.5, gpu_hours_idle=6.0)
        row.labels["team"] = "vision"
        row.start.FromDatetime(datetime(2026, 12, 1, tzinfo=timezone.utc))
        row.end.FromDatetime(datetime(2026, 12, 2, tzinfo=timezone.utc))
        return resp

    def QueryQueueHistory(self, request: usage_pb2.QueryQueueHistoryRequest,
                          context: grpc.ServicerContext) -> usage_pb2.QueryQueueHistoryResponse:
        self.requests.append(request)
        resp = usage_pb2.QueryQueueHistoryResponse(step="1h")
        row = resp.rows.add(tenant="ml", pending_jobs_mean=2.5, pending_jobs_max=4, pending_gpus_max=16,
                            oldest_wait_seconds_mean=300, oldest_wait_seconds_max=5400)
        row.start.FromDatetime(T0)
        row.end.FromDatetime(T0 + timedelta(hours=1))
        if request.parent == "tenants/-":
            for i, gpus in enumerate((64, 56)):
                c = resp.capacity.add(gpus=gpus)
                c.start.FromDatetime(T0 + timedelta(hours=i))
        return resp

    def QueryJobUtilization(self, request: usage_pb2.QueryJobUtilizationRequest,
                            context: grpc.ServicerContext) -> usage_pb2.QueryJobUtilizationResponse:
        self.requests.append(request)
        resp = usage_pb2.QueryJobUtilizationResponse(step_seconds=900, available=self.available)
        if self.available:
            s = resp.series.add(replica="worker-0", gpu="GPU-aaaa")
            p = s.points.add(utilization=87.5, memory_used_mib=2048)
            p.time.FromDatetime(T0)
            p = s.points.add(utilization=90)
            p.time.FromDatetime(T0 + timedelta(minutes=15))
        return resp


T0 = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)


@pytest.fixture
def usage() -> Iterator[Tuple[Usage, trainyard.Client]]:
    svc = Usage()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    usage_pb2_grpc.add_UsageServiceServicer_to_server(svc, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield svc, trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)
    server.stop(None)


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
            "gpuHours": 12.5, "cpuHours": 3.0, "memoryGibHours": 0.25, "gpuHoursUsed": 0.5, "gpuHoursIdle": 6.0,
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


def test_queue_history_rows(usage: Tuple[Usage, trainyard.Client]) -> None:
    svc, client = usage
    row = {
        "start": T0, "end": T0 + timedelta(hours=1), "tenant": "ml",
        "pendingJobsMean": 2.5, "pendingJobsMax": 4, "pendingGpusMax": 16,
        "oldestWaitSecondsMean": 300.0, "oldestWaitSecondsMax": 5400.0, "capacityGpus": None,
    }
    assert client.queue_history(datetime(2026, 12, 1), step="5m") == [row]
    req = svc.requests[0]
    assert req.parent == "tenants/ml"
    assert req.step == "5m"
    assert req.start.ToDatetime(tzinfo=timezone.utc) == datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert not req.HasField("end")

    # Every tenant's: the cluster's GPUs beside each row, and the bucket in
    # which nothing waited as a row of its own.
    rows = client.queue_history(all_tenants=True)
    assert svc.requests[1].parent == "tenants/-"
    assert svc.requests[1].step == "1h"
    assert rows == [dict(row, capacityGpus=64), {
        "start": T0 + timedelta(hours=1), "end": T0 + timedelta(hours=2), "tenant": "",
        "pendingJobsMean": 0.0, "pendingJobsMax": 0, "pendingGpusMax": 0,
        "oldestWaitSecondsMean": 0.0, "oldestWaitSecondsMax": 0.0, "capacityGpus": 56,
    }]


def test_job_utilization_rows(usage: Tuple[Usage, trainyard.Client]) -> None:
    svc, client = usage
    rows = client.job_utilization("mnist-1", end=datetime(2026, 12, 1, 12), step_seconds=30)
    assert rows == [
        {"replica": "worker-0", "gpu": "GPU-aaaa", "time": T0, "utilization": 87.5, "memoryUsedMib": 2048.0},
        {"replica": "worker-0", "gpu": "GPU-aaaa", "time": T0 + timedelta(minutes=15), "utilization": 90.0,
         "memoryUsedMib": None},
    ]
    req = svc.requests[0]
    assert req.name == "tenants/ml/jobs/mnist-1"
    assert req.step_seconds == 30
    assert not req.HasField("start")
    assert req.end.ToDatetime(tzinfo=timezone.utc) == datetime(2026, 12, 1, 12, tzinfo=timezone.utc)

    client.job_utilization("tenants/cv/jobs/resnet")
    assert svc.requests[1].name == "tenants/cv/jobs/resnet"
    assert svc.requests[1].step_seconds == 0

    with pytest.raises(ValueError, match="step_seconds"):
        client.job_utilization("mnist-1", step_seconds=-1)

    svc.available = False
    with pytest.warns(trainyard.UtilizationWarning, match="--prometheus-url"):
        assert client.job_utilization("mnist-1") == []
