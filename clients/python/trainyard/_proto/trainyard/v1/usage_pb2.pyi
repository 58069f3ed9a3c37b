from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CapacityPoint(_message.Message):
    __slots__ = ["gpus", "start"]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    gpus: int
    start: _timestamp_pb2.Timestamp
    def __init__(self, start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., gpus: _Optional[int] = ...) -> None: ...

class QueryJobUtilizationRequest(_message.Message):
    __slots__ = ["end", "name", "start", "step_seconds"]
    END_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    end: _timestamp_pb2.Timestamp
    name: str
    start: _timestamp_pb2.Timestamp
    step_seconds: int
    def __init__(self, name: _Optional[str] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., step_seconds: _Optional[int] = ...) -> None: ...

class QueryJobUtilizationResponse(_message.Message):
    __slots__ = ["available", "end", "series", "start", "step_seconds"]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    SERIES_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    available: bool
    end: _timestamp_pb2.Timestamp
    series: _containers.RepeatedCompositeFieldContainer[UtilizationSeries]
    start: _timestamp_pb2.Timestamp
    step_seconds: int
    def __init__(self, series: _Optional[_Iterable[_Union[UtilizationSeries, _Mapping]]] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., step_seconds: _Optional[int] = ..., available: bool = ...) -> None: ...

class QueryQueueHistoryRequest(_message.Message):
    __slots__ = ["end", "parent", "start", "step"]
    END_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    end: _timestamp_pb2.Timestamp
    parent: str
    start: _timestamp_pb2.Timestamp
    step: str
    def __init__(self, parent: _Optional[str] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., step: _Optional[str] = ...) -> None: ...

class QueryQueueHistoryResponse(_message.Message):
    __slots__ = ["capacity", "end", "rows", "start", "step"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    capacity: _containers.RepeatedCompositeFieldContainer[CapacityPoint]
    end: _timestamp_pb2.Timestamp
    rows: _containers.RepeatedCompositeFieldContainer[QueueHistoryRow]
    start: _timestamp_pb2.Timestamp
    step: str
    def __init__(self, rows: _Optional[_Iterable[_Union[QueueHistoryRow, _Mapping]]] = ..., capacity: _Optional[_Iterable[_Union[CapacityPoint, _Mapping]]] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., step: _Optional[str] = ...) -> None: ...

class QueryUsageRequest(_message.Message):
    __slots__ = ["end", "group_by", "parent", "start", "step"]
    END_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    end: _timestamp_pb2.Timestamp
    group_by: str
    parent: str
    start: _timestamp_pb2.Timestamp
    step: str
    def __init__(self, parent: _Optional[str] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., group_by: _Optional[str] = ..., step: _Optional[str] = ...) -> None: ...

class QueryUsageResponse(_message.Message):
    __slots__ = ["end", "group_by", "rows", "start", "step"]
    END_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    end: _timestamp_pb2.Timestamp
    group_by: str
    rows: _containers.RepeatedCompositeFieldContainer[UsageRow]
    start: _timestamp_pb2.Timestamp
    step: str
    def __init__(self, rows: _Optional[_Iterable[_Union[UsageRow, _Mapping]]] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., step: _Optional[str] = ..., group_by: _Optional[str] = ...) -> None: ...

class QueueHistoryRow(_message.Message):
    __slots__ = ["end", "oldest_wait_seconds_max", "oldest_wait_seconds_mean", "pending_gpus_max", "pending_jobs_max", "pending_jobs_mean", "start", "tenant"]
    END_FIELD_NUMBER: _ClassVar[int]
    OLDEST_WAIT_SECONDS_MAX_FIELD_NUMBER: _ClassVar[int]
    OLDEST_WAIT_SECONDS_MEAN_FIELD_NUMBER: _ClassVar[int]
    PENDING_GPUS_MAX_FIELD_NUMBER: _ClassVar[int]
    PENDING_JOBS_MAX_FIELD_NUMBER: _ClassVar[int]
    PENDING_JOBS_MEAN_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    end: _timestamp_pb2.Timestamp
    oldest_wait_seconds_max: float
    oldest_wait_seconds_mean: float
    pending_gpus_max: int
    pending_jobs_max: int
    pending_jobs_mean: float
    start: _timestamp_pb2.Timestamp
    tenant: str
    def __init__(self, start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., tenant: _Optional[str] = ..., pending_jobs_mean: _Optional[float] = ..., pending_jobs_max: _Optional[int] = ..., pending_gpus_max: _Optional[int] = ..., oldest_wait_seconds_mean: _Optional[float] = ..., oldest_wait_seconds_max: _Optional[float] = ...) -> None: ...

class UsageRow(_message.Message):
    __slots__ = ["cpu_hours", "creator", "end", "gpu_hours", "gpu_hours_idle", "gpu_hours_used", "labels", "memory_gib_hours", "start", "tenant"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_IDLE_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_USED_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_GIB_HOURS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    cpu_hours: float
    creator: str
    end: _timestamp_pb2.Timestamp
    gpu_hours: float
    gpu_hours_idle: float
    gpu_hours_used: float
    labels: _containers.ScalarMap[str, str]
    memory_gib_hours: float
    start: _timestamp_pb2.Timestamp
    tenant: str
    def __init__(self, start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., tenant: _Optional[str] = ..., creator: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., gpu_hours: _Optional[float] = ..., cpu_hours: _Optional[float] = ..., memory_gib_hours: _Optional[float] = ..., gpu_hours_used: _Optional[float] = ..., gpu_hours_idle: _Optional[float] = ...) -> None: ...

class UtilizationPoint(_message.Message):
    __slots__ = ["memory_used_mib", "time", "utilization"]
    MEMORY_USED_MIB_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    memory_used_mib: float
    time: _timestamp_pb2.Timestamp
    utilization: float
    def __init__(self, time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., utilization: _Optional[float] = ..., memory_used_mib: _Optional[float] = ...) -> None: ...

class UtilizationSeries(_message.Message):
    __slots__ = ["gpu", "points", "replica"]
    GPU_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    gpu: str
    points: _containers.RepeatedCompositeFieldContainer[UtilizationPoint]
    replica: str
    def __init__(self, replica: _Optional[str] = ..., gpu: _Optional[str] = ..., points: _Optional[_Iterable[_Union[UtilizationPoint, _Mapping]]] = ...) -> None: ...
