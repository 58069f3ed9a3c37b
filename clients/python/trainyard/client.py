"""The Trainyard client: submit, follow and manage training jobs from Python."""

from __future__ import annotations

import json
import os
import time
import uuid
import warnings
from pathlib import Path
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union, cast

import grpc
from google.protobuf import json_format

from trainyard import _documents, _progress, _settings
from trainyard._proto.trainyard.v1 import (
    experiment_pb2,
    experiment_pb2_grpc,
    job_pb2,
    job_pb2_grpc,
    usage_pb2,
    usage_pb2_grpc,
)
from trainyard.errors import JobCancelled, JobFailed, OutOfRange, TrainyardError, Unavailable, from_rpc_error

JobRef = Union[str, job_pb2.Job]

FINAL_STATES = (job_pb2.JOB_STATE_SUCCEEDED, job_pb2.JOB_STATE_FAILED, job_pb2.JOB_STATE_CANCELLED)

# A GetJob of a large job carries every replica's log tail; gRPC's 4 MiB
# default is less than that can be.
_MAX_RECEIVE = 64 << 20

# BatchCreateJobs takes at most this many jobs per call.
_MAX_BATCH = 1000


class TFJobWarning(UserWarning):
    """A field of a submitted Kubeflow TFJob that is not carried over as written."""


class UtilizationWarning(UserWarning):
    """GPU utilisation was asked of a server that has no Prometheus to read it from."""


def _set_window(req: Any, start: Optional[datetime], end: Optional[datetime]) -> None:
    """Sets a query's start and end where given; naive datetimes are UTC."""
    for field, t in (("start", start), ("end", end)):
        if t is not None:
            getattr(req, field).FromDatetime(t if t.tzinfo else t.replace(tzinfo=timezone.utc))


def _step_width(step: str) -> Optional[timedelta]:
    """The width of a bucket of step ("5m", "1h", "1d"); None if unknown."""
    units = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}
    if len(step) < 2 or step[-1] not in units or not step[:-1].isdigit():
        return None
    return int(step[:-1]) * units[step[-1]]


class Client:
    """A connection to Trainyard for one tenant.

    Arguments left out are read as tyctl reads them: the environment
    (``TYCTL_SERVER``, ``TYCTL_TENANT``, ``TYCTL_TOKEN``, ...), then tyctl's
    config file, where ``tyctl login`` stores its token. So after ``tyctl
    login`` in a terminal, ``Client()`` in a notebook just works.

    Args:
        target: the gRPC address, host:port (default localhost:9090).
        token: an OIDC ID token; sent on every call, never printed.
        tenant: the tenant whose jobs the short names refer to.
        insecure: plaintext instead of TLS (for a server on this machine).
        ca_file: PEM certificates to trust besides the system's.
        timeout: seconds each unary call may take.
    """

    def __init__(self, target: Optional[str] = None, token: Optional[str] = None, tenant: Optional[str] = None, *,
                 insecure: Optional[bool] = None, ca_file: Optional[str] = None, timeout: float = 30.0) -> None:
        s = _settings.resolve(target, token, tenant, insecure, ca_file)
        self.target, self.tenant, self.timeout = s.server, s.tenant, timeout
        self._metadata = (("authorization", f"Bearer {s.token}"),) if s.token else ()
        options = [("grpc.max_receive_message_length", _MAX_RECEIVE)]
        if s.insecure:
            self._channel = grpc.insecure_channel(s.server, options=options)
        else:
            roots = Path(s.ca_file).read_bytes() if s.ca_file else None
            self._channel = grpc.secure_channel(s.server, grpc.ssl_channel_credentials(root_certificates=roots), options=options)
        self._jobs = job_pb2_grpc.JobServiceStub(self._channel)  # type: ignore[no-untyped-call]  # generated, untyped
        self._usage = usage_pb2_grpc.UsageServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._experiments = experiment_pb2_grpc.ExperimentServiceStub(self._channel)  # type: ignore[no-untyped-call]

    def __repr__(self) -> str:  # never the token
        return f"Client(target={self.target!r}, tenant={self.tenant!r})"

    def close(self) -> None:
        """Closes the connection."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- names ---

    def _parent(self) -> str:
        if not self.tenant:
            raise ValueError("no tenant: pass tenant=..., set TYCTL_TENANT, or tyctl config set tenant")
        return f"tenants/{self.tenant}"

    def _name(self, job: JobRef) -> str:
        if isinstance(job, job_pb2.Job):
            return job.name
        if job.startswith("tenants/"):
            return job
        return f"{self._parent()}/jobs/{job}"

    def _call(self, method: Callable[..., Any], request: Any, timeout: Optional[float] = None) -> Any:
        try:
            return method(request, metadata=self._metadata, timeout=timeout or self.timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    # --- usage ---

    def usage(self, start: Optional[datetime] = None, end: Optional[datetime] = None, *, group_by: str = "",
              step: str = "1h", all_tenants: bool = False) -> List[Dict[str, Any]]:
        """The usage ledger: GPU-, CPU- and memory-hours the jobs held from
        admission to end, by hour (``step="1h"``) or UTC day (``"1d"``),
        as a list of rows that ``pandas.DataFrame(rows)`` takes as is.

        Each row has ``start`` and ``end`` (UTC datetimes), ``tenant``,
        ``creator`` and ``label:<key>`` when grouped by them (``group_by=
        "creator,label:team"``), ``gpuHours``, ``cpuHours``,
        ``memoryGibHours``, ``gpuHoursUsed`` (GPU-hours times the GPUs'
        measured utilisation) and ``gpuHoursIdle`` (GPU-hours held while
        the job was flagged IdleGPUs; both 0 without the server's
        --prometheus-url): the columns of the REST API's CSV. Buckets
        without usage are left out. ``all_tenants``: every tenant's
        (platform admins). Naive datetimes are taken as UTC.
        """
        req = usage_pb2.QueryUsageRequest(parent="tenants/-" if all_tenants else self._parent(), group_by=group_by, step=step)
        _set_window(req, start, end)
        resp = self._call(self._usage.QueryUsage, req)
        groups = [g.strip() for g in resp.group_by.split(",") if g.strip()]
        rows: List[Dict[str, Any]] = []
        for r in resp.rows:
            row: Dict[str, Any] = {
                "start": r.start.ToDatetime(tzinfo=timezone.utc),
                "end": r.end.ToDatetime(tzinfo=timezone.utc),
                "tenant": r.tenant,
            }
            for g in groups:
                if g == "creator":
                    row["creator"] = r.creator
                elif g.startswith("label:"):
                    row[g] = r.labels.get(g[len("label:"):], "")
            row.update(gpuHours=r.gpu_hours, cpuHours=r.cpu_hours, memoryGibHours=r.memory_gib_hours,
                       gpuHoursUsed=r.gpu_hours_used, gpuHoursIdle=r.gpu_hours_idle)
            rows.append(row)
        return rows

    def queue_history(self, start: Optional[datetime] = None, end: Optional[datetime] = None, *, step: str = "1h",
                      all_tenants: bool = False) -> List[Dict[str, Any]]:
        """The queue over time: how many jobs waited for admission and how
        long, by bucket of ``step`` (``"5m"``, ``"1h"`` or ``"1d"``), as a
        list of rows that ``pandas.DataFrame(rows)`` takes as is. The
        scheduler samples the queue every minute and keeps 35 days; the
        window defaults to the last 24 hours.

        Each row has ``start`` and ``end`` (UTC datetimes), ``tenant``,
        ``pendingJobsMean`` and ``pendingJobsMax`` (jobs waiting),
        ``pendingGpusMax`` (GPUs they asked for), ``oldestWaitSecondsMean``
        and ``oldestWaitSecondsMax`` (the longest wait), and
        ``capacityGpus``: the cluster's GPUs in the bucket with
        ``all_tenants`` (every tenant's queue, platform admins), else None.
        Buckets in which none of a tenant's jobs waited are left out; with
        ``all_tenants`` a bucket sampled with nothing waiting is a row of
        its own, with tenant ``""`` and zeros. Naive datetimes are UTC.
        """
        req = usage_pb2.QueryQueueHistoryRequest(parent="tenants/-" if all_tenants else self._parent(), step=step)
        _set_window(req, start, end)
        resp = self._call(self._usage.QueryQueueHistory, req)
        capacity = {c.start.ToDatetime(tzinfo=timezone.utc): c.gpus for c in resp.capacity}
        rows: List[Dict[str, Any]] = []
        for r in resp.rows:
            t = r.start.ToDatetime(tzinfo=timezone.utc)
            rows.append({
                "start": t, "end": r.end.ToDatetime(tzinfo=timezone.utc), "tenant": r.tenant,
                "pendingJobsMean": r.pending_jobs_mean, "pendingJobsMax": r.pending_jobs_max,
                "pendingGpusMax": r.pending_gpus_max,
                "oldestWaitSecondsMean": r.oldest_wait_seconds_mean, "oldestWaitSecondsMax": r.oldest_wait_seconds_max,
                "capacityGpus": capacity.get(t),
            })
        width = _step_width(resp.step)
        seen = {row["start"] for row in rows}
        for t, gpus in capacity.items():
            if t not in seen:
                rows.append({
                    "start": t, "end": t + width if width else None, "tenant": "",
                    "pendingJobsMean": 0.0, "pendingJobsMax": 0, "pendingGpusMax": 0,
                    "oldestWaitSecondsMean": 0.0, "oldestWaitSecondsMax": 0.0, "capacityGpus": gpus,
                })
        rows.sort(key=lambda row: cast(datetime, row["start"]))
        return rows

    def job_utilization(self, job: JobRef, start: Optional[datetime] = None, end: Optional[datetime] = None, *,
                        step_seconds: int = 0) -> List[Dict[str, Any]]:
        """A job's GPU utilisation over its life (by default from its
        admission to its end, or now), one row per sample of each GPU of
        each replica, which ``pandas.DataFrame(rows).pivot(index="time",
        columns=["replica", "gpu"], values="utilization")`` turns into a
        chart's table.

        Each row has ``replica`` (``worker-0``), ``gpu`` (its UUID or
        index), ``time`` (UTC datetime), ``utilization`` (percent, 0 to
        100) and ``memoryUsedMib`` (None without a sample). The server reads
        them from Prometheus (its --prometheus-url); without one this
        warns and returns an empty list. Samples Prometheus has forgotten
        are missing: then the job's kept mean and p95 (``get(job)``) stand
        in. ``step_seconds``: the resolution (default: the window over 240
        points, at least 15). Naive datetimes are UTC.
        """
        if step_seconds < 0:
            raise ValueError(f"step_seconds {step_seconds}: want 0 (the server's default) or more")
        req = usage_pb2.QueryJobUtilizationRequest(name=self._name(job), step_seconds=step_seconds)
        _set_window(req, start, end)
        resp = self._call(self._usage.QueryJobUtilization, req)
        if not resp.available:
            warnings.warn("GPU utilisation is not available: the server runs without --prometheus-url", UtilizationWarning,
                          stacklevel=2)
            return []
        rows: List[Dict[str, Any]] = []
        for s in resp.series:
            for p in s.points:
                rows.append({
                    "replica": s.replica, "gpu": s.gpu, "time": p.time.ToDatetime(tzinfo=timezone.utc),
                    "utilization": p.utilization,
                    "memoryUsedMib": p.memory_used_mib if p.HasField("memory_used_mib") else None,
                })
        return rows

    # --- experiments ---

    def _experiment_name(self, experiment: str) -> str:
        return experiment if experiment.startswith("tenants/") else f"{self._parent()}/experiments/{experiment}"

    def create_experiment(self, doc: Union[Mapping[str, Any], str, "os.PathLike[str]"], *,
                          experiment_id: Optional[str] = None) -> experiment_pb2.Experiment:
        """Creates a hyperparameter experiment and returns it (RUNNING).

        ``doc`` is a dict or the path of a YAML or JSON file shaped as
        tyctl's experiment files: ``{"name": ..., "spec": {"template":
        {"labels": ..., "spec": <a job spec>}, "parameters": [...],
        "objective": {...}, "algorithm": {...}, "parallelism": ...,
        "maxTrials": ..., "earlyStopping": {...}, "seed": ...}}``. The
        template's job spec is read as a job file's (ParseJobFile: short
        enum values). ``experiment_id`` wins over the document's name.
        """
        if not isinstance(doc, Mapping):
            import yaml  # python3-yaml, as for job files
            with open(doc, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
            if not isinstance(doc, Mapping):
                raise ValueError("an experiment file holds one object: {name, spec}")
        spec_doc = dict(doc.get("spec") or {})
        template = spec_doc.pop("template", None)
        spec = json_format.ParseDict(spec_doc, experiment_pb2.ExperimentSpec())
        if template is not None:
            jobs = self._parse(_documents.JobFile(json.dumps(
                {"labels": template.get("labels") or {}, "spec": template.get("spec") or {}}, default=str), "spec.template"))
            spec.template.CopyFrom(experiment_pb2.JobTemplate(labels=dict(jobs[0].labels), spec=jobs[0].spec))
        name = experiment_id or str(doc.get("name") or "")
        if not name:
            raise ValueError("the experiment needs a name: name in the document, or experiment_id=")
        return cast(experiment_pb2.Experiment, self._call(self._experiments.CreateExperiment, experiment_pb2.CreateExperimentRequest(
            parent=self._parent(), experiment_id=name, experiment=experiment_pb2.Experiment(spec=spec))))

    def experiment(self, experiment: str) -> experiment_pb2.Experiment:
        """Returns an experiment with its best trial and trial counts."""
        return cast(experiment_pb2.Experiment, self._call(self._experiments.GetExperiment,
                                                         experiment_pb2.GetExperimentRequest(name=self._experiment_name(experiment))))

    def experiments(self) -> Iterator[experiment_pb2.Experiment]:
        """The tenant's experiments, by id."""
        token = ""
        while True:
            resp = self._call(self._experiments.ListExperiments, experiment_pb2.ListExperimentsRequest(
                parent=self._parent(), page_token=token, page_size=1000))
            yield from resp.experiments
            token = resp.next_page_token
            if not token:
                return

    def trials(self, experiment: str) -> List[Dict[str, Any]]:
        """An experiment's trials as rows ``pandas.DataFrame(rows)`` takes,
        best first: ``trial``, ``state``, the objective metric's final value
        (None unless it ended with one), ``best`` and ``bestStep`` of its
        curve, ``lastStep``, then each parameter by name (as the template
        got it, a string)."""
        exp = self.experiment(experiment)
        resp = self._call(self._experiments.ListTrials, experiment_pb2.ListTrialsRequest(parent=exp.name))
        metric = exp.spec.objective.metric
        sign = -1.0 if exp.spec.objective.direction == "maximize" else 1.0
        rows: List[Dict[str, Any]] = []
        for t in resp.trials:
            row: Dict[str, Any] = {
                "trial": t.index,
                "state": experiment_pb2.TrialState.Name(t.state).removeprefix("TRIAL_STATE_"),
                metric: t.objective if t.HasField("objective") else None,
                "best": t.best_value if t.HasField("best_value") else None,
                "bestStep": t.best_step,
                "lastStep": t.last_step,
            }
            for p in exp.spec.parameters:
                row[p.name] = t.parameters.get(p.name, "")
            rows.append(row)

        def key(r: Dict[str, Any]) -> Tuple[int, float, int]:
            v = r[metric]
            if r["state"] != "SUCCEEDED" or v is None:
                return (1, 0.0, r["trial"])
            return (0, sign * v, r["trial"])
        return sorted(rows, key=key)

    def trial_metrics(self, experiment: str, trial: int, metric: str = "") -> Dict[str, List[Tuple[int, float]]]:
        """A trial's reported points, {metric: [(step, value), ...]} by step."""
        name = f"{self._experiment_name(experiment)}/trials/{trial}"
        resp = self._call(self._experiments.GetTrialMetrics, experiment_pb2.GetTrialMetricsRequest(name=name, metric=metric))
        return {s.metric: [(p.step, p.value) for p in s.points] for s in resp.series}

    def cancel_experiment(self, experiment: str) -> experiment_pb2.Experiment:
        """Cancels a running experiment and its running trials' jobs."""
        return cast(experiment_pb2.Experiment, self._call(self._experiments.CancelExperiment,
                                                         experiment_pb2.CancelExperimentRequest(name=self._experiment_name(experiment))))

    def delete_experiment(self, experiment: str) -> None:
        """Deletes an experiment that has ended (its trials' jobs stay)."""
        self._call(self._experiments.DeleteExperiment, experiment_pb2.DeleteExperimentRequest(name=self._experiment_name(experiment)))

    # --- jobs ---

    def submit(self, spec: _documents.Document, *, job_id: Optional[str] = None, request_id: Optional[str] = None,
               allow_warnings: bool = False) -> job_pb2.Job:
        """Submits a job and returns it (QUEUED).

        Args:
            spec: a dict (the Job resource as the REST API takes it, or just its
                spec), the path of a YAML or JSON file holding one, YAML or
                JSON text (a str with a line break), a ``trainyard.Job``, or
                a Kubeflow TFJob manifest (dict or file, ``kind: TFJob``),
                which is submitted as it is. Files, text and dicts are read
                by the server (ParseJobFile), as tyctl's and the console's
                are: enum values may be short (``worker``, ``OnFailure``).
            job_id: the job's id; a TFJob's metadata.name, else generated.
            request_id: makes a retry safe: the server returns the job the
                first request created. A fresh one when not given.
            allow_warnings: for a TFJob, run it even though some of its fields
                cannot be honoured; they are issued as :class:`TFJobWarning`.

        Raises:
            InvalidArgument: with ``violations`` naming every field that is wrong.
        """
        kind, doc = _documents.load(spec)
        request_id = request_id or str(uuid.uuid4())
        if kind == "file":
            jobs = self._parse(doc)
            if len(jobs) != 1:
                raise ValueError(f"{doc.name or 'the text'} holds {len(jobs)} jobs: submit_many() submits several")
            kind, doc = "job", jobs[0]
        if kind == "tfjob":
            resp = self._call(self._jobs.ImportTFJob, job_pb2.ImportTFJobRequest(
                parent=self._parent(), tfjob=doc, job_id=job_id or "", request_id=request_id, allow_warnings=allow_warnings))
            for w in resp.warnings:
                warnings.warn(f"{w.field}: {w.description}", TFJobWarning, stacklevel=2)
            return cast(job_pb2.Job, resp.job)
        return cast(job_pb2.Job, self._call(self._jobs.CreateJob, job_pb2.CreateJobRequest(
            parent=self._parent(), job=doc, job_id=job_id or "", request_id=request_id)))

    def submit_many(self, specs: Union[str, "os.PathLike[str]", Iterable[_documents.Document]], *,
                    request_id: Optional[str] = None) -> List[job_pb2.Job]:
        """Submits many jobs at once and returns them (QUEUED), in order.

        They go to BatchCreateJobs, 1,000 per call; each call creates all of
        its jobs or none, in order, so a job may depend (``spec.dependsOn``)
        on one before it: a pipeline is one call, and a validation error names every wrong field of
        every job (``requests[3].spec.replicas[0].image``, the index counting
        within that call).

        Args:
            specs: a directory of job files (``*.yaml``, ``*.yml``, ``*.json``,
                in name order), a YAML file or text of several documents, or
                an iterable of documents as submit() takes them (not TFJobs,
                and a file or text there may hold several jobs); a
                ``(job_id, document)`` pair gives the job its id, else a
                document's ``name`` does, else the server generates one.
                Files, text and dicts are read by the server (ParseJobFile),
                whose errors name ``documents[i]`` of the file.
            request_id: job n (counting from 0) gets the request id
                ``"<request_id>-<n>"``, so calling again with the same
                request_id after an error or a timeout creates nothing
                twice. A fresh one when not given.
        """
        request_id = request_id or str(uuid.uuid4())
        items: Iterable[Any]
        if isinstance(specs, str) and "\n" in specs:
            items = [specs]
        elif isinstance(specs, (str, os.PathLike)):
            items = _documents.files(os.fspath(specs))
        else:
            items = specs
        parsed: List[Tuple[str, job_pb2.Job]] = []
        for n, item in enumerate(items):
            job_id = ""
            if isinstance(item, tuple):
                job_id, item = item
            if isinstance(item, _documents.JobFile):
                kind, doc = "file", item
            else:
                kind, doc = _documents.load(item)
            if kind == "tfjob":
                raise ValueError(f"document {n} is a TFJob: submit TFJobs one at a time with submit()")
            read: List[job_pb2.Job] = self._parse(doc) if kind == "file" else [cast(job_pb2.Job, doc)]
            if job_id and len(read) != 1:
                raise ValueError(f"item {n}: one job id for {len(read)} jobs")
            parsed.extend((job_id, j) for j in read)
        reqs = []
        for n, (job_id, doc) in enumerate(parsed):
            job_id = job_id or doc.name.rsplit("/", 1)[-1]
            doc.ClearField("name")
            reqs.append(job_pb2.CreateJobRequest(job=doc, job_id=job_id, request_id=f"{request_id}-{n}"))
        jobs: List[job_pb2.Job] = []
        for start in range(0, len(reqs), _MAX_BATCH):
            resp = self._call(self._jobs.BatchCreateJobs, job_pb2.BatchCreateJobsRequest(
                parent=self._parent(), requests=reqs[start:start + _MAX_BATCH]))
            jobs.extend(resp.jobs)
        return jobs

    def _parse(self, f: _documents.JobFile) -> List[job_pb2.Job]:
        """The jobs of a job file, read by the server (ParseJobFile); an
        InvalidArgument names every problem at ``documents[i].<field>``."""
        resp = self._call(self._jobs.ParseJobFile, job_pb2.ParseJobFileRequest(
            parent=self._parent(), content=f.content, filename=f.name))
        return list(resp.jobs)

    def get(self, job: JobRef) -> job_pb2.Job:
        """Returns a job, with the log tails of replicas that ended."""
        return cast(job_pb2.Job, self._call(self._jobs.GetJob, job_pb2.GetJobRequest(name=self._name(job))))

    def list(self, filter: str = "", page_size: int = 0) -> Iterator[job_pb2.Job]:
        """Iterates over the tenant's jobs, newest first, page after page.

        Args:
            filter: as tyctl's: ``state = RUNNING``, ``labels.team = "nlp"``, joined by AND.
            page_size: jobs per call (the server's default, 50, when 0).
        """
        for resp in self._pages(filter, page_size):
            yield from resp.jobs

    def snapshot(self, filter: str = "", page_size: int = 0) -> Tuple[List[job_pb2.Job], int]:
        """Reads every job that matches filter, and where to follow them from.

        Returns the jobs, newest first, and the position the first page was
        read at: ``watch(filter=filter, after_event_id=position)`` then
        yields every change committed after the list was read, so nothing
        created or changed between the two is missed. A change the list
        already shows may come again; a job's ``update_time`` says which
        read is newer.
        """
        jobs: List[job_pb2.Job] = []
        position = 0
        for resp in self._pages(filter, page_size):
            position = position or resp.watch_after_event_id
            jobs.extend(resp.jobs)
        return jobs, position

    def _pages(self, filter: str, page_size: int) -> Iterator[job_pb2.ListJobsResponse]:
        token = ""
        while True:
            resp = self._call(self._jobs.ListJobs, job_pb2.ListJobsRequest(
                parent=self._parent(), filter=filter, page_size=page_size, page_token=token))
            yield resp
            token = resp.next_page_token
            if not token:
                return

    def events(self, job: JobRef) -> List[job_pb2.JobEvent]:
        """Returns every event of a job, oldest first."""
        out: List[job_pb2.JobEvent] = []
        token = ""
        while True:
            resp = self._call(self._jobs.ListJobEvents, job_pb2.ListJobEventsRequest(parent=self._name(job), page_token=token))
            out.extend(resp.events)
            token = resp.next_page_token
            if not token:
                return out

    def cancel(self, job: JobRef) -> job_pb2.Job:
        """Cancels a job; a finished one is returned as it is."""
        return cast(job_pb2.Job, self._call(self._jobs.CancelJob, job_pb2.CancelJobRequest(name=self._name(job))))

    def suspend(self, job: JobRef) -> job_pb2.Job:
        """Suspends a job: its pods stop gracefully and its quota is released.

        A running job comes back with ``status.suspend_requested`` set and
        becomes ``JOB_STATE_SUSPENDED`` once its pods are gone; a suspended
        job is returned as it is; a finished one is FAILED_PRECONDITION.
        """
        return cast(job_pb2.Job, self._call(self._jobs.SuspendJob, job_pb2.SuspendJobRequest(name=self._name(job))))

    def resume(self, job: JobRef) -> job_pb2.Job:
        """Resumes a suspended job: it is queued again, its restarts unchanged.

        A job that is not suspended is returned as it is.
        """
        return cast(job_pb2.Job, self._call(self._jobs.ResumeJob, job_pb2.ResumeJobRequest(name=self._name(job))))

    def delete(self, job: JobRef) -> None:
        """Deletes a finished job and what it left in Kubernetes."""
        self._call(self._jobs.DeleteJob, job_pb2.DeleteJobRequest(name=self._name(job)))

    def logs(self, job: JobRef, replica: str = "", follow: bool = False, tail_lines: int = 0) -> Iterator[str]:
        """Yields a replica's log line by line (the chief's, else worker-0's, by default).

        While the pod runs the log comes from Kubernetes (``follow`` keeps
        reading until it ends); once it is gone, the tail Trainyard kept.
        """
        req = job_pb2.GetJobLogsRequest(name=self._name(job), replica=replica, follow=follow, tail_lines=tail_lines)
        rest = ""
        try:
            for chunk in self._jobs.GetJobLogs(req, metadata=self._metadata):
                rest += chunk.data.decode("utf-8", errors="replace")
                *lines, rest = rest.split("\n")
                yield from lines
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        if rest:
            yield rest

    def watch(self, job: Optional[JobRef] = None, *, filter: str = "", after_event_id: int = 0) -> Iterator[job_pb2.WatchJobResponse]:
        """Yields a job's changes (or, without a job, those of every job of
        the tenant that matches filter): each event with the job as it was
        after it. A dropped stream is reopened after the last event seen, so
        nothing is missed or repeated. A job's watch ends once it is final.
        A tenant's watch starts now, or after after_event_id: the position
        ``snapshot`` returns follows on from its list. Both ask the server
        for bookmarks (the position it has read to, past events the filter
        left out or of other jobs) and reopen after the latest, so a quiet
        job's watch resumes within what event retention keeps; they are
        not yielded.

        Raises:
            OutOfRange: after_event_id (or, after a long outage, the last
                event seen) is older than the events the server keeps; take
                a new ``snapshot`` and watch from its position.
        """
        yield from self._watch(job, filter, after_event_id, None)

    def _watch(self, job: Optional[JobRef], filter: str, after_event_id: int,
               deadline: Optional[float], fresh_when_expired: bool = False) -> Iterator[job_pb2.WatchJobResponse]:
        """watch's loop. fresh_when_expired: when the server no longer keeps
        the events after the last one seen (OutOfRange), watch the job
        afresh, from its current state, instead of raising (``wait``)."""
        last = after_event_id
        backoff = 0.5
        while True:
            timeout = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            if job is not None:
                req = job_pb2.WatchJobRequest(name=self._name(job), after_event_id=last, bookmarks=True)
                stream = self._jobs.WatchJob(req, metadata=self._metadata, timeout=timeout)
            else:
                req = job_pb2.WatchJobsRequest(parent=self._parent(), filter=filter, after_event_id=last, bookmarks=True)
                stream = self._jobs.WatchJobs(req, metadata=self._metadata, timeout=timeout)
            try:
                for msg in stream:
                    backoff = 0.5
                    if msg.HasField("event"):
                        last = msg.event.id
                    elif not msg.HasField("job"):
                        last = max(last, msg.bookmark_event_id)  # a bookmark
                        continue
                    yield msg
                    if job is not None and msg.job.status.state in FINAL_STATES:
                        return
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and deadline is not None:
                    raise TimeoutError(f"{self._name(job) if job is not None else 'the watch'} did not end within the timeout") from None
                err = from_rpc_error(e)
                if isinstance(err, OutOfRange) and fresh_when_expired and last > 0:
                    last = 0
                    continue
                # The server ends long streams (UNAVAILABLE), and restarts:
                # both resume after the last event seen.
                if not isinstance(err, Unavailable):
                    raise err from None
            finally:
                stream.cancel()
            time.sleep(backoff)
            backoff = min(backoff * 2, 10)

    def wait(self, job: JobRef, timeout: Optional[float] = None, *, progress: bool = True) -> job_pb2.Job:
        """Waits for a job to end and returns it as it ended.

        Shows the job's progress (state and replicas) as it changes: one
        line updated in place in a terminal, a live line in Jupyter. A
        dropped watch is resumed; if the server no longer keeps the events
        since (event retention, a long outage), it watches the job afresh.

        Raises:
            JobFailed: the job FAILED; carries its reason and the failed
                replicas' log tails.
            JobCancelled: the job was cancelled.
            TimeoutError: it did not end within timeout seconds.
        """
        name = self._name(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        show = _progress.Progress(enabled=progress)
        try:
            current = self.get(name)
            show.update(current)
            if current.status.state not in FINAL_STATES:
                # A resume after an outage longer than the server's event
                # retention goes on from the job as it is then: waiting
                # needs its end, not every event on the way.
                for msg in self._watch(name, "", 0, deadline, fresh_when_expired=True):
                    show.update(msg.job)
        finally:
            show.close()
        final = self.get(name)  # with the log tails, which watches leave out
        if final.status.state == job_pb2.JOB_STATE_FAILED:
            raise JobFailed(final)
        if final.status.state == job_pb2.JOB_STATE_CANCELLED:
            raise JobCancelled(final)
        return final


__all__ = ["Client", "TFJobWarning", "FINAL_STATES", "TrainyardError"]
