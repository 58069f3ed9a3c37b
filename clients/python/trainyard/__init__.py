"""Trainyard's Python client: distributed TensorFlow training jobs from notebooks.

    import trainyard

    ty = trainyard.Client()                  # tyctl's settings and login
    job = ty.submit("mnist.yaml")            # a job file, a dict, or a Kubeflow TFJob
    ty.wait(job)                             # progress; raises JobFailed with the log tail
    print("\\n".join(ty.logs(job, "worker-0")))

A hyperparameter sweep is one experiment: ``ty.create_experiment("exp.yaml")``
runs its trials as jobs; ``ty.trials("lr-sweep")`` returns them best first,
as rows ``pandas.DataFrame`` takes.

A pipeline is one ``submit_many`` of jobs that depend on earlier ones
(``spec.dependsOn``); inside their pods, :mod:`trainyard.pipeline` writes a
job's outputs and reads its dependencies' results.

Errors are exceptions (:mod:`trainyard.errors`); an invalid job raises
:class:`InvalidArgument`, whose ``violations`` name each field.
"""

from trainyard._proto.trainyard.v1.job_pb2 import Job, JobEvent, JobSpec, JobState, WatchJobResponse
from trainyard import pipeline
from trainyard.client import FINAL_STATES, Client, TFJobWarning, UtilizationWarning
from trainyard.errors import (
    AlreadyExists,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    JobCancelled,
    JobFailed,
    NotFound,
    OutOfRange,
    PermissionDenied,
    TrainyardError,
    Unauthenticated,
    Unavailable,
)

__version__ = "0.1.0"

__all__ = [
    "Client", "TFJobWarning", "UtilizationWarning", "FINAL_STATES", "pipeline",
    "Job", "JobEvent", "JobSpec", "JobState", "WatchJobResponse",
    "TrainyardError", "InvalidArgument", "FieldViolation", "Unauthenticated", "PermissionDenied", "NotFound",
    "AlreadyExists", "FailedPrecondition", "Unavailable", "OutOfRange", "JobFailed", "JobCancelled",
]
