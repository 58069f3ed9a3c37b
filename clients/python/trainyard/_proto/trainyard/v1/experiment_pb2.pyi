from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainyard._proto.protoc_gen_openapiv2.options import annotations_pb2 as _annotations_pb2_1
from trainyard._proto.trainyard.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
EXPERIMENT_STATE_CANCELLED: ExperimentState
EXPERIMENT_STATE_FAILED: ExperimentState
EXPERIMENT_STATE_RUNNING: ExperimentState
EXPERIMENT_STATE_SUCCEEDED: ExperimentState
EXPERIMENT_STATE_UNSPECIFIED: ExperimentState
TRIAL_STATE_CANCELLED: TrialState
TRIAL_STATE_EARLY_STOPPED: TrialState
TRIAL_STATE_FAILED: TrialState
TRIAL_STATE_RUNNING: TrialState
TRIAL_STATE_SUCCEEDED: TrialState
TRIAL_STATE_UNSPECIFIED: TrialState

class Algorithm(_message.Message):
    __slots__ = ["grid", "name", "tpe"]
    GRID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TPE_FIELD_NUMBER: _ClassVar[int]
    grid: GridSettings
    name: str
    tpe: TpeSettings
    def __init__(self, name: _Optional[str] = ..., grid: _Optional[_Union[GridSettings, _Mapping]] = ..., tpe: _Optional[_Union[TpeSettings, _Mapping]] = ...) -> None: ...

class AshaSettings(_message.Message):
    __slots__ = ["eta", "max_resource", "min_resource"]
    ETA_FIELD_NUMBER: _ClassVar[int]
    MAX_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    MIN_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    eta: int
    max_resource: int
    min_resource: int
    def __init__(self, min_resource: _Optional[int] = ..., eta: _Optional[int] = ..., max_resource: _Optional[int] = ...) -> None: ...

class CancelExperimentRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CreateExperimentRequest(_message.Message):
    __slots__ = ["experiment", "experiment_id", "parent"]
    EXPERIMENT_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    experiment: Experiment
    experiment_id: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., experiment: _Optional[_Union[Experiment, _Mapping]] = ..., experiment_id: _Optional[str] = ...) -> None: ...

class DeleteExperimentRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteExperimentResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class EarlyStopping(_message.Message):
    __slots__ = ["asha", "median_stop", "rule"]
    ASHA_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_STOP_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    asha: AshaSettings
    median_stop: MedianStopSettings
    rule: str
    def __init__(self, rule: _Optional[str] = ..., median_stop: _Optional[_Union[MedianStopSettings, _Mapping]] = ..., asha: _Optional[_Union[AshaSettings, _Mapping]] = ...) -> None: ...

class Experiment(_message.Message):
    __slots__ = ["best_trial", "create_time", "creator", "name", "spec", "state", "state_reason", "trial_counts", "uid", "update_time"]
    BEST_TRIAL_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_REASON_FIELD_NUMBER: _ClassVar[int]
    TRIAL_COUNTS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    best_trial: Trial
    create_time: _timestamp_pb2.Timestamp
    creator: str
    name: str
    spec: ExperimentSpec
    state: ExperimentState
    state_reason: str
    trial_counts: TrialCounts
    uid: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., spec: _Optional[_Union[ExperimentSpec, _Mapping]] = ..., state: _Optional[_Union[ExperimentState, str]] = ..., state_reason: _Optional[str] = ..., best_trial: _Optional[_Union[Trial, _Mapping]] = ..., trial_counts: _Optional[_Union[TrialCounts, _Mapping]] = ..., creator: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExperimentSpec(_message.Message):
    __slots__ = ["algorithm", "early_stopping", "max_failed_trials", "max_trials", "objective", "parallelism", "parameters", "seed", "template"]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    EARLY_STOPPING_FIELD_NUMBER: _ClassVar[int]
    MAX_FAILED_TRIALS_FIELD_NUMBER: _ClassVar[int]
    MAX_TRIALS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    algorithm: Algorithm
    early_stopping: EarlyStopping
    max_failed_trials: int
    max_trials: int
    objective: Objective
    parallelism: int
    parameters: _containers.RepeatedCompositeFieldContainer[Parameter]
    seed: int
    template: JobTemplate
    def __init__(self, template: _Optional[_Union[JobTemplate, _Mapping]] = ..., parameters: _Optional[_Iterable[_Union[Parameter, _Mapping]]] = ..., objective: _Optional[_Union[Objective, _Mapping]] = ..., algorithm: _Optional[_Union[Algorithm, _Mapping]] = ..., parallelism: _Optional[int] = ..., max_trials: _Optional[int] = ..., max_failed_trials: _Optional[int] = ..., early_stopping: _Optional[_Union[EarlyStopping, _Mapping]] = ..., seed: _Optional[int] = ...) -> None: ...

class GetExperimentRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetTrialMetricsRequest(_message.Message):
    __slots__ = ["metric", "name"]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    metric: str
    name: str
    def __init__(self, name: _Optional[str] = ..., metric: _Optional[str] = ...) -> None: ...

class GetTrialMetricsResponse(_message.Message):
    __slots__ = ["series"]
    SERIES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[MetricSeries]
    def __init__(self, series: _Optional[_Iterable[_Union[MetricSeries, _Mapping]]] = ...) -> None: ...

class GridSettings(_message.Message):
    __slots__ = ["points_per_double"]
    POINTS_PER_DOUBLE_FIELD_NUMBER: _ClassVar[int]
    points_per_double: int
    def __init__(self, points_per_double: _Optional[int] = ...) -> None: ...

class JobTemplate(_message.Message):
    __slots__ = ["labels", "spec"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    spec: _job_pb2.JobSpec
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., spec: _Optional[_Union[_job_pb2.JobSpec, _Mapping]] = ...) -> None: ...

class ListExperimentsRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "parent"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListExperimentsResponse(_message.Message):
    __slots__ = ["experiments", "next_page_token"]
    EXPERIMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    experiments: _containers.RepeatedCompositeFieldContainer[Experiment]
    next_page_token: str
    def __init__(self, experiments: _Optional[_Iterable[_Union[Experiment, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTrialsRequest(_message.Message):
    __slots__ = ["parent"]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    def __init__(self, parent: _Optional[str] = ...) -> None: ...

class ListTrialsResponse(_message.Message):
    __slots__ = ["trials"]
    TRIALS_FIELD_NUMBER: _ClassVar[int]
    trials: _containers.RepeatedCompositeFieldContainer[Trial]
    def __init__(self, trials: _Optional[_Iterable[_Union[Trial, _Mapping]]] = ...) -> None: ...

class MedianStopSettings(_message.Message):
    __slots__ = ["grace_steps", "min_trials"]
    GRACE_STEPS_FIELD_NUMBER: _ClassVar[int]
    MIN_TRIALS_FIELD_NUMBER: _ClassVar[int]
    grace_steps: int
    min_trials: int
    def __init__(self, min_trials: _Optional[int] = ..., grace_steps: _Optional[int] = ...) -> None: ...

class MetricPoint(_message.Message):
    __slots__ = ["step", "time", "value"]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    step: int
    time: _timestamp_pb2.Timestamp
    value: float
    def __init__(self, step: _Optional[int] = ..., value: _Optional[float] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MetricSeries(_message.Message):
    __slots__ = ["metric", "points"]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    metric: str
    points: _containers.RepeatedCompositeFieldContainer[MetricPoint]
    def __init__(self, metric: _Optional[str] = ..., points: _Optional[_Iterable[_Union[MetricPoint, _Mapping]]] = ...) -> None: ...

class Objective(_message.Message):
    __slots__ = ["direction", "goal", "metric"]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    direction: str
    goal: float
    metric: str
    def __init__(self, metric: _Optional[str] = ..., direction: _Optional[str] = ..., goal: _Optional[float] = ...) -> None: ...

class Parameter(_message.Message):
    __slots__ = ["kind", "max", "min", "name", "points", "scale", "values"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    kind: str
    max: float
    min: float
    name: str
    points: _containers.RepeatedScalarFieldContainer[float]
    scale: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., scale: _Optional[str] = ..., min: _Optional[float] = ..., max: _Optional[float] = ..., values: _Optional[_Iterable[str]] = ..., points: _Optional[_Iterable[float]] = ...) -> None: ...

class TpeSettings(_message.Message):
    __slots__ = ["candidates", "gamma", "prior_weight", "startup_trials"]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    GAMMA_FIELD_NUMBER: _ClassVar[int]
    PRIOR_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    STARTUP_TRIALS_FIELD_NUMBER: _ClassVar[int]
    candidates: int
    gamma: float
    prior_weight: float
    startup_trials: int
    def __init__(self, gamma: _Optional[float] = ..., startup_trials: _Optional[int] = ..., candidates: _Optional[int] = ..., prior_weight: _Optional[float] = ...) -> None: ...

class Trial(_message.Message):
    __slots__ = ["best_step", "best_value", "create_time", "index", "job", "last_step", "name", "objective", "parameters", "state", "state_reason", "update_time"]
    class ParametersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BEST_STEP_FIELD_NUMBER: _ClassVar[int]
    BEST_VALUE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_REASON_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    best_step: int
    best_value: float
    create_time: _timestamp_pb2.Timestamp
    index: int
    job: str
    last_step: int
    name: str
    objective: float
    parameters: _containers.ScalarMap[str, str]
    state: TrialState
    state_reason: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., index: _Optional[int] = ..., job: _Optional[str] = ..., parameters: _Optional[_Mapping[str, str]] = ..., state: _Optional[_Union[TrialState, str]] = ..., state_reason: _Optional[str] = ..., objective: _Optional[float] = ..., best_value: _Optional[float] = ..., best_step: _Optional[int] = ..., last_step: _Optional[int] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TrialCounts(_message.Message):
    __slots__ = ["cancelled", "early_stopped", "failed", "running", "succeeded"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    EARLY_STOPPED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    early_stopped: int
    failed: int
    running: int
    succeeded: int
    def __init__(self, running: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., early_stopped: _Optional[int] = ..., cancelled: _Optional[int] = ...) -> None: ...

class ExperimentState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TrialState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
