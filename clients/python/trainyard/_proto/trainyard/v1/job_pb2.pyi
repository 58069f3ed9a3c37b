from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from trainyard._proto.google.api import httpbody_pb2 as _httpbody_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainyard._proto.protoc_gen_openapiv2.options import annotations_pb2 as _annotations_pb2_1
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

CLEAN_POD_POLICY_ALL: CleanPodPolicy
CLEAN_POD_POLICY_NONE: CleanPodPolicy
CLEAN_POD_POLICY_RUNNING: CleanPodPolicy
CLEAN_POD_POLICY_UNSPECIFIED: CleanPodPolicy
DEPENDENCY_CONDITION_FINISHED: DependencyCondition
DEPENDENCY_CONDITION_STARTED: DependencyCondition
DEPENDENCY_CONDITION_SUCCEEDED: DependencyCondition
DEPENDENCY_CONDITION_UNSPECIFIED: DependencyCondition
DESCRIPTOR: _descriptor.FileDescriptor
ESTIMATE_BASIS_AVAILABLE: EstimateBasis
ESTIMATE_BASIS_BACKOFF: EstimateBasis
ESTIMATE_BASIS_DEADLINES: EstimateBasis
ESTIMATE_BASIS_PREEMPTION: EstimateBasis
ESTIMATE_BASIS_RUN_TIMES: EstimateBasis
ESTIMATE_BASIS_UNSPECIFIED: EstimateBasis
JOB_STATE_CANCELLED: JobState
JOB_STATE_FAILED: JobState
JOB_STATE_QUEUED: JobState
JOB_STATE_RESTARTING: JobState
JOB_STATE_RUNNING: JobState
JOB_STATE_STARTING: JobState
JOB_STATE_SUCCEEDED: JobState
JOB_STATE_SUSPENDED: JobState
JOB_STATE_UNSPECIFIED: JobState
ON_DEPENDENCY_FAILURE_CANCEL: OnDependencyFailure
ON_DEPENDENCY_FAILURE_FAIL: OnDependencyFailure
ON_DEPENDENCY_FAILURE_UNSPECIFIED: OnDependencyFailure
REPLICA_STATE_FAILED: ReplicaState
REPLICA_STATE_PENDING: ReplicaState
REPLICA_STATE_RUNNING: ReplicaState
REPLICA_STATE_SUCCEEDED: ReplicaState
REPLICA_STATE_UNSPECIFIED: ReplicaState
REPLICA_TYPE_CHIEF: ReplicaType
REPLICA_TYPE_EVALUATOR: ReplicaType
REPLICA_TYPE_PS: ReplicaType
REPLICA_TYPE_UNSPECIFIED: ReplicaType
REPLICA_TYPE_WORKER: ReplicaType
RESTART_POLICY_ALWAYS: RestartPolicy
RESTART_POLICY_EXIT_CODE: RestartPolicy
RESTART_POLICY_NEVER: RestartPolicy
RESTART_POLICY_ON_FAILURE: RestartPolicy
RESTART_POLICY_UNSPECIFIED: RestartPolicy
SUCCESS_POLICY_ALL_WORKERS: SuccessPolicy
SUCCESS_POLICY_CHIEF_OR_WORKER0: SuccessPolicy
SUCCESS_POLICY_UNSPECIFIED: SuccessPolicy
WAIT_REASON_BUDGET: WaitReason
WAIT_REASON_CAPACITY: WaitReason
WAIT_REASON_DEPENDENCY: WaitReason
WAIT_REASON_ORDER: WaitReason
WAIT_REASON_PREEMPTED: WaitReason
WAIT_REASON_PRIORITY: WaitReason
WAIT_REASON_QUOTA: WaitReason
WAIT_REASON_UNSCHEDULABLE: WaitReason
WAIT_REASON_UNSPECIFIED: WaitReason

class Affinity(_message.Message):
    __slots__ = ["preferred", "required"]
    PREFERRED_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    preferred: _containers.RepeatedCompositeFieldContainer[PreferredTerm]
    required: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    def __init__(self, required: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ..., preferred: _Optional[_Iterable[_Union[PreferredTerm, _Mapping]]] = ...) -> None: ...

class BatchCreateJobsRequest(_message.Message):
    __slots__ = ["parent", "requests"]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    parent: str
    requests: _containers.RepeatedCompositeFieldContainer[CreateJobRequest]
    def __init__(self, parent: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[CreateJobRequest, _Mapping]]] = ...) -> None: ...

class BatchCreateJobsResponse(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CheckpointVolume(_message.Message):
    __slots__ = ["claim_name", "mount_path"]
    CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    MOUNT_PATH_FIELD_NUMBER: _ClassVar[int]
    claim_name: str
    mount_path: str
    def __init__(self, claim_name: _Optional[str] = ..., mount_path: _Optional[str] = ...) -> None: ...

class Condition(_message.Message):
    __slots__ = ["last_transition_time", "message", "reason", "status", "type"]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    last_transition_time: _timestamp_pb2.Timestamp
    message: str
    reason: str
    status: bool
    type: str
    def __init__(self, type: _Optional[str] = ..., status: bool = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., last_transition_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateJobRequest(_message.Message):
    __slots__ = ["job", "job_id", "parent", "request_id"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    job: Job
    job_id: str
    parent: str
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., job: _Optional[_Union[Job, _Mapping]] = ..., job_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class DeleteJobRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteJobResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DependencyResult(_message.Message):
    __slots__ = ["condition", "exit_codes", "job", "job_uid", "outputs", "reason", "state"]
    class ExitCodesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class OutputsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODES_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    JOB_UID_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    condition: DependencyCondition
    exit_codes: _containers.ScalarMap[str, int]
    job: str
    job_uid: str
    outputs: _containers.ScalarMap[str, str]
    reason: str
    state: JobState
    def __init__(self, job: _Optional[str] = ..., job_uid: _Optional[str] = ..., condition: _Optional[_Union[DependencyCondition, str]] = ..., state: _Optional[_Union[JobState, str]] = ..., reason: _Optional[str] = ..., exit_codes: _Optional[_Mapping[str, int]] = ..., outputs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class EnvVar(_message.Message):
    __slots__ = ["name", "secret", "value"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    secret: SecretKeyRef
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., secret: _Optional[_Union[SecretKeyRef, _Mapping]] = ...) -> None: ...

class ExecAction(_message.Message):
    __slots__ = ["command"]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, command: _Optional[_Iterable[str]] = ...) -> None: ...

class GPUUtilization(_message.Message):
    __slots__ = ["first_sample_time", "gpus", "last_busy_time", "last_sample_time", "max_memory_mib", "mean_memory_mib", "mean_percent", "p95_percent", "samples"]
    FIRST_SAMPLE_TIME_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    LAST_BUSY_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_SAMPLE_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    MEAN_MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    MEAN_PERCENT_FIELD_NUMBER: _ClassVar[int]
    P95_PERCENT_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    first_sample_time: _timestamp_pb2.Timestamp
    gpus: int
    last_busy_time: _timestamp_pb2.Timestamp
    last_sample_time: _timestamp_pb2.Timestamp
    max_memory_mib: float
    mean_memory_mib: float
    mean_percent: float
    p95_percent: float
    samples: int
    def __init__(self, mean_percent: _Optional[float] = ..., p95_percent: _Optional[float] = ..., mean_memory_mib: _Optional[float] = ..., max_memory_mib: _Optional[float] = ..., gpus: _Optional[int] = ..., samples: _Optional[int] = ..., first_sample_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_sample_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_busy_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetJobLogsRequest(_message.Message):
    __slots__ = ["follow", "name", "replica", "tail_lines"]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    TAIL_LINES_FIELD_NUMBER: _ClassVar[int]
    follow: bool
    name: str
    replica: str
    tail_lines: int
    def __init__(self, name: _Optional[str] = ..., replica: _Optional[str] = ..., follow: bool = ..., tail_lines: _Optional[int] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class HTTPGetAction(_message.Message):
    __slots__ = ["headers", "path", "port", "scheme"]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    headers: _containers.RepeatedCompositeFieldContainer[HTTPHeader]
    path: str
    port: int
    scheme: str
    def __init__(self, path: _Optional[str] = ..., port: _Optional[int] = ..., scheme: _Optional[str] = ..., headers: _Optional[_Iterable[_Union[HTTPHeader, _Mapping]]] = ...) -> None: ...

class HTTPHeader(_message.Message):
    __slots__ = ["name", "value"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ImportTFJobRequest(_message.Message):
    __slots__ = ["allow_warnings", "job_id", "parent", "request_id", "tfjob", "validate_only"]
    ALLOW_WARNINGS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TFJOB_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    allow_warnings: bool
    job_id: str
    parent: str
    request_id: str
    tfjob: _struct_pb2.Struct
    validate_only: bool
    def __init__(self, parent: _Optional[str] = ..., tfjob: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., job_id: _Optional[str] = ..., request_id: _Optional[str] = ..., allow_warnings: bool = ..., validate_only: bool = ...) -> None: ...

class ImportTFJobResponse(_message.Message):
    __slots__ = ["job", "warnings"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    job: Job
    warnings: _containers.RepeatedCompositeFieldContainer[ImportWarning]
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., warnings: _Optional[_Iterable[_Union[ImportWarning, _Mapping]]] = ...) -> None: ...

class ImportWarning(_message.Message):
    __slots__ = ["description", "field", "unsupported"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    UNSUPPORTED_FIELD_NUMBER: _ClassVar[int]
    description: str
    field: str
    unsupported: bool
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ..., unsupported: bool = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["create_time", "creator", "display_name", "labels", "name", "spec", "status", "uid", "update_time"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    creator: str
    display_name: str
    labels: _containers.ScalarMap[str, str]
    name: str
    spec: JobSpec
    status: JobStatus
    uid: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., display_name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., status: _Optional[_Union[JobStatus, _Mapping]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., creator: _Optional[str] = ...) -> None: ...

class JobDependency(_message.Message):
    __slots__ = ["condition", "job", "job_uid"]
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    JOB_UID_FIELD_NUMBER: _ClassVar[int]
    condition: DependencyCondition
    job: str
    job_uid: str
    def __init__(self, job: _Optional[str] = ..., condition: _Optional[_Union[DependencyCondition, str]] = ..., job_uid: _Optional[str] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ["create_time", "id", "job", "message", "reason", "state", "type"]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    id: int
    job: str
    message: str
    reason: str
    state: JobState
    type: str
    def __init__(self, id: _Optional[int] = ..., job: _Optional[str] = ..., type: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ["checkpoint", "cluster_selector", "clusters", "depends_on", "on_dependency_failure", "preemptible", "priority", "replicas", "run_policy", "success_policy", "tensorboard", "termination_grace_period_seconds"]
    class ClusterSelectorEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    ON_DEPENDENCY_FAILURE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTIBLE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    RUN_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_POLICY_FIELD_NUMBER: _ClassVar[int]
    TENSORBOARD_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    checkpoint: CheckpointVolume
    cluster_selector: _containers.ScalarMap[str, str]
    clusters: _containers.RepeatedScalarFieldContainer[str]
    depends_on: _containers.RepeatedCompositeFieldContainer[JobDependency]
    on_dependency_failure: OnDependencyFailure
    preemptible: bool
    priority: int
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaSpec]
    run_policy: RunPolicy
    success_policy: SuccessPolicy
    tensorboard: TensorBoard
    termination_grace_period_seconds: int
    def __init__(self, replicas: _Optional[_Iterable[_Union[ReplicaSpec, _Mapping]]] = ..., run_policy: _Optional[_Union[RunPolicy, _Mapping]] = ..., success_policy: _Optional[_Union[SuccessPolicy, str]] = ..., checkpoint: _Optional[_Union[CheckpointVolume, _Mapping]] = ..., tensorboard: _Optional[_Union[TensorBoard, _Mapping]] = ..., priority: _Optional[int] = ..., termination_grace_period_seconds: _Optional[int] = ..., preemptible: bool = ..., depends_on: _Optional[_Iterable[_Union[JobDependency, _Mapping]]] = ..., on_dependency_failure: _Optional[_Union[OnDependencyFailure, str]] = ..., cluster_selector: _Optional[_Mapping[str, str]] = ..., clusters: _Optional[_Iterable[str]] = ...) -> None: ...

class JobStatus(_message.Message):
    __slots__ = ["cancel_requested", "cluster", "completion_time", "conditions", "dependencies", "gpu_type", "gpu_utilization", "message", "outputs", "queue", "reason", "replica_counts", "replicas", "requeues", "restarts", "start_time", "state", "suspend_requested"]
    class OutputsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TIME_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_COUNTS_FIELD_NUMBER: _ClassVar[int]
    REQUEUES_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    cancel_requested: bool
    cluster: str
    completion_time: _timestamp_pb2.Timestamp
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    dependencies: _containers.RepeatedCompositeFieldContainer[DependencyResult]
    gpu_type: str
    gpu_utilization: GPUUtilization
    message: str
    outputs: _containers.ScalarMap[str, str]
    queue: QueueStatus
    reason: str
    replica_counts: _containers.RepeatedCompositeFieldContainer[ReplicaCounts]
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaStatus]
    requeues: int
    restarts: int
    start_time: _timestamp_pb2.Timestamp
    state: JobState
    suspend_requested: bool
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., completion_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., replica_counts: _Optional[_Iterable[_Union[ReplicaCounts, _Mapping]]] = ..., replicas: _Optional[_Iterable[_Union[ReplicaStatus, _Mapping]]] = ..., restarts: _Optional[int] = ..., cancel_requested: bool = ..., queue: _Optional[_Union[QueueStatus, _Mapping]] = ..., requeues: _Optional[int] = ..., gpu_type: _Optional[str] = ..., cluster: _Optional[str] = ..., suspend_requested: bool = ..., outputs: _Optional[_Mapping[str, str]] = ..., dependencies: _Optional[_Iterable[_Union[DependencyResult, _Mapping]]] = ..., gpu_utilization: _Optional[_Union[GPUUtilization, _Mapping]] = ...) -> None: ...

class ListJobEventsRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "parent"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListJobEventsResponse(_message.Message):
    __slots__ = ["events", "next_page_token"]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[JobEvent]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[JobEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ["filter", "page_size", "page_token", "parent"]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    filter: str
    page_size: int
    page_token: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., filter: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ["jobs", "next_page_token", "watch_after_event_id"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WATCH_AFTER_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    watch_after_event_id: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., watch_after_event_id: _Optional[int] = ...) -> None: ...

class NodeSelectorRequirement(_message.Message):
    __slots__ = ["key", "operator", "values"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeSelectorTerm(_message.Message):
    __slots__ = ["match_expressions"]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[NodeSelectorRequirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[NodeSelectorRequirement, _Mapping]]] = ...) -> None: ...

class ParseJobFileRequest(_message.Message):
    __slots__ = ["content", "filename", "parent"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    filename: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., content: _Optional[str] = ..., filename: _Optional[str] = ...) -> None: ...

class ParseJobFileResponse(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class PreferredTerm(_message.Message):
    __slots__ = ["preference", "weight"]
    PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    preference: NodeSelectorTerm
    weight: int
    def __init__(self, weight: _Optional[int] = ..., preference: _Optional[_Union[NodeSelectorTerm, _Mapping]] = ...) -> None: ...

class Probe(_message.Message):
    __slots__ = ["exec", "failure_threshold", "http_get", "initial_delay_seconds", "period_seconds", "success_threshold", "tcp_socket", "timeout_seconds"]
    EXEC_FIELD_NUMBER: _ClassVar[int]
    FAILURE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    HTTP_GET_FIELD_NUMBER: _ClassVar[int]
    INITIAL_DELAY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    TCP_SOCKET_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    exec: ExecAction
    failure_threshold: int
    http_get: HTTPGetAction
    initial_delay_seconds: int
    period_seconds: int
    success_threshold: int
    tcp_socket: TCPSocketAction
    timeout_seconds: int
    def __init__(self, exec: _Optional[_Union[ExecAction, _Mapping]] = ..., tcp_socket: _Optional[_Union[TCPSocketAction, _Mapping]] = ..., http_get: _Optional[_Union[HTTPGetAction, _Mapping]] = ..., initial_delay_seconds: _Optional[int] = ..., period_seconds: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., success_threshold: _Optional[int] = ..., failure_threshold: _Optional[int] = ...) -> None: ...

class QueueStatus(_message.Message):
    __slots__ = ["blocked_by", "cluster_position", "estimate_basis", "estimated_start_time", "message", "reason", "tenant_position", "update_time", "waiting_for"]
    BLOCKED_BY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_POSITION_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_TIME_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_BASIS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TENANT_POSITION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_FIELD_NUMBER: _ClassVar[int]
    blocked_by: str
    cluster_position: int
    estimate_basis: EstimateBasis
    estimated_start_time: _timestamp_pb2.Timestamp
    message: str
    reason: WaitReason
    tenant_position: int
    update_time: _timestamp_pb2.Timestamp
    waiting_for: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, reason: _Optional[_Union[WaitReason, str]] = ..., message: _Optional[str] = ..., tenant_position: _Optional[int] = ..., cluster_position: _Optional[int] = ..., blocked_by: _Optional[str] = ..., waiting_for: _Optional[_Iterable[str]] = ..., estimated_start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., estimate_basis: _Optional[_Union[EstimateBasis, str]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReplicaCounts(_message.Message):
    __slots__ = ["active", "failed", "pending", "succeeded", "type"]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    active: int
    failed: int
    pending: int
    succeeded: int
    type: ReplicaType
    def __init__(self, type: _Optional[_Union[ReplicaType, str]] = ..., pending: _Optional[int] = ..., active: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class ReplicaSpec(_message.Message):
    __slots__ = ["affinity", "args", "command", "count", "env", "image", "liveness_probe", "mount_service_account_token", "node_selector", "pod_annotations", "pod_labels", "port", "privileged", "readiness_probe", "resources", "restart_policy", "retryable_exit_codes", "secret_volumes", "startup_probe", "tolerations", "type", "working_dir"]
    class NodeSelectorEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class PodAnnotationsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class PodLabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    LIVENESS_PROBE_FIELD_NUMBER: _ClassVar[int]
    MOUNT_SERVICE_ACCOUNT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    POD_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    POD_LABELS_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGED_FIELD_NUMBER: _ClassVar[int]
    READINESS_PROBE_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    RESTART_POLICY_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_EXIT_CODES_FIELD_NUMBER: _ClassVar[int]
    SECRET_VOLUMES_FIELD_NUMBER: _ClassVar[int]
    STARTUP_PROBE_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    affinity: Affinity
    args: _containers.RepeatedScalarFieldContainer[str]
    command: _containers.RepeatedScalarFieldContainer[str]
    count: int
    env: _containers.RepeatedCompositeFieldContainer[EnvVar]
    image: str
    liveness_probe: Probe
    mount_service_account_token: bool
    node_selector: _containers.ScalarMap[str, str]
    pod_annotations: _containers.ScalarMap[str, str]
    pod_labels: _containers.ScalarMap[str, str]
    port: int
    privileged: bool
    readiness_probe: Probe
    resources: Resources
    restart_policy: RestartPolicy
    retryable_exit_codes: _containers.RepeatedScalarFieldContainer[int]
    secret_volumes: _containers.RepeatedCompositeFieldContainer[SecretVolume]
    startup_probe: Probe
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    type: ReplicaType
    working_dir: str
    def __init__(self, type: _Optional[_Union[ReplicaType, str]] = ..., count: _Optional[int] = ..., image: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Iterable[_Union[EnvVar, _Mapping]]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., affinity: _Optional[_Union[Affinity, _Mapping]] = ..., pod_labels: _Optional[_Mapping[str, str]] = ..., pod_annotations: _Optional[_Mapping[str, str]] = ..., port: _Optional[int] = ..., restart_policy: _Optional[_Union[RestartPolicy, str]] = ..., retryable_exit_codes: _Optional[_Iterable[int]] = ..., secret_volumes: _Optional[_Iterable[_Union[SecretVolume, _Mapping]]] = ..., privileged: bool = ..., working_dir: _Optional[str] = ..., mount_service_account_token: bool = ..., liveness_probe: _Optional[_Union[Probe, _Mapping]] = ..., readiness_probe: _Optional[_Union[Probe, _Mapping]] = ..., startup_probe: _Optional[_Union[Probe, _Mapping]] = ...) -> None: ...

class ReplicaStatus(_message.Message):
    __slots__ = ["gpu_utilization", "index", "last_termination", "node", "pod", "restarts", "state", "tf_config", "type"]
    GPU_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_TERMINATION_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TF_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    gpu_utilization: GPUUtilization
    index: int
    last_termination: Termination
    node: str
    pod: str
    restarts: int
    state: ReplicaState
    tf_config: str
    type: ReplicaType
    def __init__(self, type: _Optional[_Union[ReplicaType, str]] = ..., index: _Optional[int] = ..., pod: _Optional[str] = ..., node: _Optional[str] = ..., state: _Optional[_Union[ReplicaState, str]] = ..., restarts: _Optional[int] = ..., last_termination: _Optional[_Union[Termination, _Mapping]] = ..., tf_config: _Optional[str] = ..., gpu_utilization: _Optional[_Union[GPUUtilization, _Mapping]] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ["cpu", "cpu_limit", "gpu", "memory", "memory_limit"]
    CPU_FIELD_NUMBER: _ClassVar[int]
    CPU_LIMIT_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    cpu: str
    cpu_limit: str
    gpu: int
    memory: str
    memory_limit: str
    def __init__(self, cpu: _Optional[str] = ..., memory: _Optional[str] = ..., gpu: _Optional[int] = ..., cpu_limit: _Optional[str] = ..., memory_limit: _Optional[str] = ...) -> None: ...

class ResumeJobRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RunPolicy(_message.Message):
    __slots__ = ["active_deadline_seconds", "backoff_limit", "clean_pod_policy", "ttl_seconds_after_finished"]
    ACTIVE_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_LIMIT_FIELD_NUMBER: _ClassVar[int]
    CLEAN_POD_POLICY_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_AFTER_FINISHED_FIELD_NUMBER: _ClassVar[int]
    active_deadline_seconds: int
    backoff_limit: int
    clean_pod_policy: CleanPodPolicy
    ttl_seconds_after_finished: int
    def __init__(self, backoff_limit: _Optional[int] = ..., active_deadline_seconds: _Optional[int] = ..., ttl_seconds_after_finished: _Optional[int] = ..., clean_pod_policy: _Optional[_Union[CleanPodPolicy, str]] = ...) -> None: ...

class SecretKeyRef(_message.Message):
    __slots__ = ["key", "secret"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    key: str
    secret: str
    def __init__(self, secret: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class SecretVolume(_message.Message):
    __slots__ = ["mount_path", "secret"]
    MOUNT_PATH_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    mount_path: str
    secret: str
    def __init__(self, secret: _Optional[str] = ..., mount_path: _Optional[str] = ...) -> None: ...

class SuspendJobRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class TCPSocketAction(_message.Message):
    __slots__ = ["port"]
    PORT_FIELD_NUMBER: _ClassVar[int]
    port: int
    def __init__(self, port: _Optional[int] = ...) -> None: ...

class TensorBoard(_message.Message):
    __slots__ = ["enabled", "image", "log_dir"]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    LOG_DIR_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    image: str
    log_dir: str
    def __init__(self, enabled: bool = ..., image: _Optional[str] = ..., log_dir: _Optional[str] = ...) -> None: ...

class Termination(_message.Message):
    __slots__ = ["exit_code", "finish_time", "log_tail", "message", "reason"]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    LOG_TAIL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    finish_time: _timestamp_pb2.Timestamp
    log_tail: str
    message: str
    reason: str
    def __init__(self, exit_code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., log_tail: _Optional[str] = ..., finish_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ["effect", "key", "operator", "toleration_seconds", "value"]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    TOLERATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    effect: str
    key: str
    operator: str
    toleration_seconds: int
    value: str
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., toleration_seconds: _Optional[int] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ["after_event_id", "bookmarks", "name"]
    AFTER_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    BOOKMARKS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    after_event_id: int
    bookmarks: bool
    name: str
    def __init__(self, name: _Optional[str] = ..., after_event_id: _Optional[int] = ..., bookmarks: bool = ...) -> None: ...

class WatchJobResponse(_message.Message):
    __slots__ = ["bookmark_event_id", "event", "job"]
    BOOKMARK_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    bookmark_event_id: int
    event: JobEvent
    job: Job
    def __init__(self, event: _Optional[_Union[JobEvent, _Mapping]] = ..., job: _Optional[_Union[Job, _Mapping]] = ..., bookmark_event_id: _Optional[int] = ...) -> None: ...

class WatchJobsRequest(_message.Message):
    __slots__ = ["after_event_id", "bookmarks", "filter", "parent"]
    AFTER_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    BOOKMARKS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    after_event_id: int
    bookmarks: bool
    filter: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., filter: _Optional[str] = ..., after_event_id: _Optional[int] = ..., bookmarks: bool = ...) -> None: ...

class DependencyCondition(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OnDependencyFailure(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ReplicaType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RestartPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class CleanPodPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SuccessPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class WaitReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EstimateBasis(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ReplicaState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
