from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainyard._proto.protoc_gen_openapiv2.options import annotations_pb2 as _annotations_pb2_1
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AuditActor(_message.Message):
    __slots__ = ["address", "groups", "issuer", "request_id", "subject"]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    address: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    issuer: str
    request_id: str
    subject: str
    def __init__(self, subject: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ..., issuer: _Optional[str] = ..., address: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class AuditRecord(_message.Message):
    __slots__ = ["action", "actor", "details", "id", "resource", "tenant", "time"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    action: str
    actor: AuditActor
    details: _struct_pb2.Struct
    id: int
    resource: str
    tenant: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[int] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., tenant: _Optional[str] = ..., actor: _Optional[_Union[AuditActor, _Mapping]] = ..., action: _Optional[str] = ..., resource: _Optional[str] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ListAuditRecordsRequest(_message.Message):
    __slots__ = ["action", "end_time", "page_size", "page_token", "parent", "start_time", "subject"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    action: str
    end_time: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    parent: str
    start_time: _timestamp_pb2.Timestamp
    subject: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., subject: _Optional[str] = ..., action: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListAuditRecordsResponse(_message.Message):
    __slots__ = ["audit_records", "next_page_token"]
    AUDIT_RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    audit_records: _containers.RepeatedCompositeFieldContainer[AuditRecord]
    next_page_token: str
    def __init__(self, audit_records: _Optional[_Iterable[_Union[AuditRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
