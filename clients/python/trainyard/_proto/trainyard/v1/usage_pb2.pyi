from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

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

class UsageRow(_message.Message):
    __slots__ = ["cpu_hours", "creator", "end", "gpu_hours", "gpu_hours_used", "labels", "memory_gib_hours", "start", "tenant"]
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
    GPU_HOURS_USED_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_GIB_HOURS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    cpu_hours: float
    creator: str
    end: _timestamp_pb2.Timestamp
    gpu_hours: float
    gpu_hours_used: float
    labels: _containers.ScalarMap[str, str]
    memory_gib_hours: float
    start: _timestamp_pb2.Timestamp
    tenant: str
    def __init__(self, start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., tenant: _Optional[str] = ..., creator: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., gpu_hours: _Optional[float] = ..., cpu_hours: _Optional[float] = ..., memory_gib_hours: _Optional[float] = ..., gpu_hours_used: _Optional[float] = ...) -> None: ...
