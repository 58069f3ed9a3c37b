from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainyard._proto.protoc_gen_openapiv2.options import annotations_pb2 as _annotations_pb2_1
from trainyard._proto.trainyard.v1 import tenant_pb2 as _tenant_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

CLUSTER_STATE_CORDONED: ClusterState
CLUSTER_STATE_DRAINING: ClusterState
CLUSTER_STATE_READY: ClusterState
CLUSTER_STATE_UNREACHABLE: ClusterState
CLUSTER_STATE_UNSPECIFIED: ClusterState
DESCRIPTOR: _descriptor.FileDescriptor

class AgentIdentity(_message.Message):
    __slots__ = ["issuer", "jwks", "jwks_uri", "subject"]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    JWKS_FIELD_NUMBER: _ClassVar[int]
    JWKS_URI_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    issuer: str
    jwks: str
    jwks_uri: str
    subject: str
    def __init__(self, issuer: _Optional[str] = ..., subject: _Optional[str] = ..., jwks: _Optional[str] = ..., jwks_uri: _Optional[str] = ...) -> None: ...

class Cluster(_message.Message):
    __slots__ = ["admin_state", "agent", "agent_identity", "capacity", "create_time", "display_name", "heartbeat_time", "labels", "name", "node_count", "state", "update_time", "usage"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ADMIN_STATE_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    AGENT_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    admin_state: ClusterState
    agent: str
    agent_identity: AgentIdentity
    capacity: _tenant_pb2.Quota
    create_time: _timestamp_pb2.Timestamp
    display_name: str
    heartbeat_time: _timestamp_pb2.Timestamp
    labels: _containers.ScalarMap[str, str]
    name: str
    node_count: int
    state: ClusterState
    update_time: _timestamp_pb2.Timestamp
    usage: _tenant_pb2.Quota
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., state: _Optional[_Union[ClusterState, str]] = ..., admin_state: _Optional[_Union[ClusterState, str]] = ..., heartbeat_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., agent: _Optional[str] = ..., capacity: _Optional[_Union[_tenant_pb2.Quota, _Mapping]] = ..., usage: _Optional[_Union[_tenant_pb2.Quota, _Mapping]] = ..., node_count: _Optional[int] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., agent_identity: _Optional[_Union[AgentIdentity, _Mapping]] = ...) -> None: ...

class CordonClusterRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CreateClusterRequest(_message.Message):
    __slots__ = ["cluster", "cluster_id"]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    cluster: Cluster
    cluster_id: str
    def __init__(self, cluster: _Optional[_Union[Cluster, _Mapping]] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class DeleteClusterRequest(_message.Message):
    __slots__ = ["force", "name"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    force: bool
    name: str
    def __init__(self, name: _Optional[str] = ..., force: bool = ...) -> None: ...

class DeleteClusterResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DrainClusterRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetClusterRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListClustersRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListClustersResponse(_message.Message):
    __slots__ = ["clusters"]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    clusters: _containers.RepeatedCompositeFieldContainer[Cluster]
    def __init__(self, clusters: _Optional[_Iterable[_Union[Cluster, _Mapping]]] = ...) -> None: ...

class UncordonClusterRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UpdateClusterRequest(_message.Message):
    __slots__ = ["cluster", "update_mask"]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    cluster: Cluster
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, cluster: _Optional[_Union[Cluster, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class ClusterState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
