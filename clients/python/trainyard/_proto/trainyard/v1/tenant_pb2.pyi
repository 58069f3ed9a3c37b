from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainyard._proto.protoc_gen_openapiv2.options import annotations_pb2 as _annotations_pb2_1
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BUDGET_PERIOD_MONTH: BudgetPeriod
BUDGET_PERIOD_ROLLING_30D: BudgetPeriod
BUDGET_PERIOD_UNSPECIFIED: BudgetPeriod
DESCRIPTOR: _descriptor.FileDescriptor
OVER_BUDGET_POLICY_BORROW_ONLY: OverBudgetPolicy
OVER_BUDGET_POLICY_UNSPECIFIED: OverBudgetPolicy
OVER_BUDGET_POLICY_WAIT: OverBudgetPolicy
PREEMPTION_POLICY_LOWER_PRIORITY: PreemptionPolicy
PREEMPTION_POLICY_NEVER: PreemptionPolicy
PREEMPTION_POLICY_UNSPECIFIED: PreemptionPolicy
QUEUEING_STRATEGY_BEST_EFFORT_FIFO: QueueingStrategy
QUEUEING_STRATEGY_STRICT_FIFO: QueueingStrategy
QUEUEING_STRATEGY_UNSPECIFIED: QueueingStrategy
RECLAIM_POLICY_ANY: ReclaimPolicy
RECLAIM_POLICY_LOWER_PRIORITY: ReclaimPolicy
RECLAIM_POLICY_NEVER: ReclaimPolicy
RECLAIM_POLICY_UNSPECIFIED: ReclaimPolicy
ROLE_ADMIN: Role
ROLE_EDITOR: Role
ROLE_UNSPECIFIED: Role
ROLE_VIEWER: Role
TENANT_STATE_ACTIVE: TenantState
TENANT_STATE_DELETED: TenantState
TENANT_STATE_OFFBOARDING: TenantState
TENANT_STATE_UNSPECIFIED: TenantState

class Budget(_message.Message):
    __slots__ = ["gpu_hours", "over_budget", "period"]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    OVER_BUDGET_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    gpu_hours: float
    over_budget: OverBudgetPolicy
    period: BudgetPeriod
    def __init__(self, gpu_hours: _Optional[float] = ..., period: _Optional[_Union[BudgetPeriod, str]] = ..., over_budget: _Optional[_Union[OverBudgetPolicy, str]] = ...) -> None: ...

class Cohort(_message.Message):
    __slots__ = ["create_time", "gpu_types", "name", "nominal_quota", "tenants", "update_time"]
    class GpuTypesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_QUOTA_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    gpu_types: _containers.ScalarMap[str, int]
    name: str
    nominal_quota: Quota
    tenants: _containers.RepeatedScalarFieldContainer[str]
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., nominal_quota: _Optional[_Union[Quota, _Mapping]] = ..., gpu_types: _Optional[_Mapping[str, int]] = ..., tenants: _Optional[_Iterable[str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateTenantRequest(_message.Message):
    __slots__ = ["tenant", "tenant_id"]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant: Tenant
    tenant_id: str
    def __init__(self, tenant: _Optional[_Union[Tenant, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DeleteCohortRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteCohortResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeleteSecretRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteSecretResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeleteTenantRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetCohortRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetTenantRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListCohortsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListCohortsResponse(_message.Message):
    __slots__ = ["cohorts"]
    COHORTS_FIELD_NUMBER: _ClassVar[int]
    cohorts: _containers.RepeatedCompositeFieldContainer[Cohort]
    def __init__(self, cohorts: _Optional[_Iterable[_Union[Cohort, _Mapping]]] = ...) -> None: ...

class ListSecretsRequest(_message.Message):
    __slots__ = ["parent"]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    def __init__(self, parent: _Optional[str] = ...) -> None: ...

class ListSecretsResponse(_message.Message):
    __slots__ = ["secrets"]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    secrets: _containers.RepeatedCompositeFieldContainer[Secret]
    def __init__(self, secrets: _Optional[_Iterable[_Union[Secret, _Mapping]]] = ...) -> None: ...

class ListTenantsRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTenantsResponse(_message.Message):
    __slots__ = ["next_page_token", "tenants"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    tenants: _containers.RepeatedCompositeFieldContainer[Tenant]
    def __init__(self, tenants: _Optional[_Iterable[_Union[Tenant, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ["group", "role", "subject"]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    group: str
    role: Role
    subject: str
    def __init__(self, subject: _Optional[str] = ..., group: _Optional[str] = ..., role: _Optional[_Union[Role, str]] = ...) -> None: ...

class PutCohortRequest(_message.Message):
    __slots__ = ["cohort"]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    cohort: Cohort
    def __init__(self, cohort: _Optional[_Union[Cohort, _Mapping]] = ...) -> None: ...

class PutSecretRequest(_message.Message):
    __slots__ = ["secret"]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    secret: Secret
    def __init__(self, secret: _Optional[_Union[Secret, _Mapping]] = ...) -> None: ...

class Quota(_message.Message):
    __slots__ = ["cpu", "gpu", "memory", "pods"]
    CPU_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    cpu: str
    gpu: int
    memory: str
    pods: int
    def __init__(self, gpu: _Optional[int] = ..., cpu: _Optional[str] = ..., memory: _Optional[str] = ..., pods: _Optional[int] = ...) -> None: ...

class Scheduling(_message.Message):
    __slots__ = ["idle_gpu_seconds", "idle_gpu_stop_seconds", "idle_gpu_threshold_percent", "preemption_policy", "queueing_strategy"]
    IDLE_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_GPU_STOP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_GPU_THRESHOLD_PERCENT_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    QUEUEING_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    idle_gpu_seconds: int
    idle_gpu_stop_seconds: int
    idle_gpu_threshold_percent: float
    preemption_policy: PreemptionPolicy
    queueing_strategy: QueueingStrategy
    def __init__(self, preemption_policy: _Optional[_Union[PreemptionPolicy, str]] = ..., queueing_strategy: _Optional[_Union[QueueingStrategy, str]] = ..., idle_gpu_threshold_percent: _Optional[float] = ..., idle_gpu_seconds: _Optional[int] = ..., idle_gpu_stop_seconds: _Optional[int] = ...) -> None: ...

class Secret(_message.Message):
    __slots__ = ["create_time", "data", "keys", "name", "update_time"]
    class DataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    data: _containers.ScalarMap[str, str]
    keys: _containers.RepeatedScalarFieldContainer[str]
    name: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., data: _Optional[_Mapping[str, str]] = ..., keys: _Optional[_Iterable[str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Sharing(_message.Message):
    __slots__ = ["borrowing_limit", "budget", "cohort", "fair_share_preemption", "gpu_types", "lending_limit", "reclaim_policy", "usage_half_life_seconds", "weight"]
    class GpuTypesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BORROWING_LIMIT_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    FAIR_SHARE_PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPES_FIELD_NUMBER: _ClassVar[int]
    LENDING_LIMIT_FIELD_NUMBER: _ClassVar[int]
    RECLAIM_POLICY_FIELD_NUMBER: _ClassVar[int]
    USAGE_HALF_LIFE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    borrowing_limit: Quota
    budget: Budget
    cohort: str
    fair_share_preemption: bool
    gpu_types: _containers.ScalarMap[str, int]
    lending_limit: Quota
    reclaim_policy: ReclaimPolicy
    usage_half_life_seconds: int
    weight: float
    def __init__(self, cohort: _Optional[str] = ..., borrowing_limit: _Optional[_Union[Quota, _Mapping]] = ..., lending_limit: _Optional[_Union[Quota, _Mapping]] = ..., weight: _Optional[float] = ..., reclaim_policy: _Optional[_Union[ReclaimPolicy, str]] = ..., fair_share_preemption: bool = ..., usage_half_life_seconds: _Optional[int] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., gpu_types: _Optional[_Mapping[str, int]] = ...) -> None: ...

class SharingStatus(_message.Message):
    __slots__ = ["budget_remaining_gpu_hours", "budget_reset_time", "budget_used_gpu_hours", "decayed_usage"]
    BUDGET_REMAINING_GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_RESET_TIME_FIELD_NUMBER: _ClassVar[int]
    BUDGET_USED_GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    DECAYED_USAGE_FIELD_NUMBER: _ClassVar[int]
    budget_remaining_gpu_hours: float
    budget_reset_time: _timestamp_pb2.Timestamp
    budget_used_gpu_hours: float
    decayed_usage: Quota
    def __init__(self, decayed_usage: _Optional[_Union[Quota, _Mapping]] = ..., budget_used_gpu_hours: _Optional[float] = ..., budget_remaining_gpu_hours: _Optional[float] = ..., budget_reset_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Tenant(_message.Message):
    __slots__ = ["clusters", "create_time", "display_name", "labels", "members", "name", "namespace", "pod_reader_groups", "quota", "scheduling", "sharing", "sharing_status", "state", "update_time", "usage"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    POD_READER_GROUPS_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    SHARING_STATUS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    clusters: _containers.RepeatedScalarFieldContainer[str]
    create_time: _timestamp_pb2.Timestamp
    display_name: str
    labels: _containers.ScalarMap[str, str]
    members: _containers.RepeatedCompositeFieldContainer[Member]
    name: str
    namespace: str
    pod_reader_groups: _containers.RepeatedScalarFieldContainer[str]
    quota: Quota
    scheduling: Scheduling
    sharing: Sharing
    sharing_status: SharingStatus
    state: TenantState
    update_time: _timestamp_pb2.Timestamp
    usage: Quota
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., quota: _Optional[_Union[Quota, _Mapping]] = ..., members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ..., pod_reader_groups: _Optional[_Iterable[str]] = ..., namespace: _Optional[str] = ..., state: _Optional[_Union[TenantState, str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., scheduling: _Optional[_Union[Scheduling, _Mapping]] = ..., usage: _Optional[_Union[Quota, _Mapping]] = ..., sharing: _Optional[_Union[Sharing, _Mapping]] = ..., sharing_status: _Optional[_Union[SharingStatus, _Mapping]] = ..., clusters: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateTenantRequest(_message.Message):
    __slots__ = ["tenant", "update_mask"]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    tenant: Tenant
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, tenant: _Optional[_Union[Tenant, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class ReclaimPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BudgetPeriod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OverBudgetPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PreemptionPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class QueueingStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TenantState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
