"""Job documents: what the client sends to the server's ParseJobFile, and
what it sends as it is. The lenient rules themselves are the server's
(internal/jobfile, tested there and end to end)."""

from __future__ import annotations

import json
from concurrent import futures
from pathlib import Path
from typing import Any, Iterator, List

import grpc
import pytest

import trainyard
from trainyard import _documents
from trainyard._proto.google.rpc import error_details_pb2, status_pb2
from trainyard._proto.trainyard.v1 import job_pb2, job_pb2_grpc

REPO = Path(__file__).resolve().parents[3]


def test_dict_goes_to_the_server_as_json() -> None:
    kind, f = _documents.load({"replicas": [{"type": "worker", "count": 2, "image": "tf"}]})
    assert kind == "file"
    assert json.loads(f.content) == {"spec": {"replicas": [{"type": "worker", "count": 2, "image": "tf"}]}}, \
        "a bare spec is wrapped; the short enum is left for the server"


def test_file_and_text(tmp_path: Path) -> None:
    p = tmp_path / "job.yaml"
    p.write_text("labels: {team: nlp}\nspec:\n  replicas:\n  - {type: CHIEF, image: tf}\n")
    kind, f = _documents.load(str(p))
    assert (kind, f.name) == ("file", str(p))
    assert f.content == p.read_text()
    kind, f = _documents.load(p.read_text())
    assert (kind, f.name) == ("file", ""), "a str with a line break is the text itself"


def test_protos_go_as_they_are() -> None:
    kind, job = _documents.load(job_pb2.JobSpec(replicas=[job_pb2.ReplicaSpec(image="tf")]))
    assert kind == "job"
    assert job.spec.replicas[0].image == "tf"


def test_tfjob_goes_as_it_is(tmp_path: Path) -> None:
    kind, s = _documents.load({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}})
    assert kind == "tfjob"
    assert s["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2
    kind, s = _documents.load(str(REPO / "clients" / "python" / "examples" / "tf_job_mnist.yaml"))
    assert kind == "tfjob"


def test_other_kinds_are_refused() -> None:
    with pytest.raises(ValueError):
        _documents.load({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"})


def test_directory(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("name: b0\n---\nname: b1\n")
    (tmp_path / "a.json").write_text('{"name": "a0"}')
    (tmp_path / "notes.txt").write_text("not a job")
    assert [Path(f.name).name for f in _documents.files(str(tmp_path))] == ["a.json", "b.yaml"]


class ParsingJobs(job_pb2_grpc.JobServiceServicer):
    """A JobService whose ParseJobFile returns one job per name: line, or
    the name of a JSON object (a stand-in: the real rules are the
    server's), and whose creates echo."""

    def __init__(self) -> None:
        self.parsed: List[job_pb2.ParseJobFileRequest] = []
        self.created: List[Any] = []

    def ParseJobFile(self, request: job_pb2.ParseJobFileRequest, context: grpc.ServicerContext) -> job_pb2.ParseJobFileResponse:
        self.parsed.append(request)
        if "imagee" in request.content:
            field = "documents[1].spec.replicas[0].imagee"
            context.set_trailing_metadata((("grpc-status-details-bin", _bad_request(field, "unknown field (did you mean image?)")),))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, field + ": unknown field (did you mean image?)")
        if request.content.startswith("{"):
            names = [json.loads(request.content).get("name", "")]
        else:
            names = [line.split(":", 1)[1].strip() for line in request.content.splitlines() if line.startswith("name:")]
        return job_pb2.ParseJobFileResponse(jobs=[job_pb2.Job(name=n, display_name="parsed") for n in names or [""]])

    def CreateJob(self, request: job_pb2.CreateJobRequest, context: grpc.ServicerContext) -> job_pb2.Job:
        self.created.append(request)
        return job_pb2.Job(name=f"{request.parent}/jobs/{request.job_id}", display_name=request.job.display_name)

    def BatchCreateJobs(self, request: job_pb2.BatchCreateJobsRequest, context: grpc.ServicerContext) -> job_pb2.BatchCreateJobsResponse:
        self.created.append(request)
        return job_pb2.BatchCreateJobsResponse(jobs=[job_pb2.Job(name=f"{request.parent}/jobs/{r.job_id}") for r in request.requests])


def _bad_request(field: str, description: str) -> bytes:
    """The google.rpc.Status the server attaches, with its BadRequest."""
    br = error_details_pb2.BadRequest(field_violations=[error_details_pb2.BadRequest.FieldViolation(field=field, description=description)])
    st = status_pb2.Status(code=grpc.StatusCode.INVALID_ARGUMENT.value[0], message=f"{field}: {description}")
    st.details.add().Pack(br)
    return bytes(st.SerializeToString())


@pytest.fixture
def parsing() -> Iterator[tuple[ParsingJobs, trainyard.Client]]:
    jobs = ParsingJobs()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    job_pb2_grpc.add_JobServiceServicer_to_server(jobs, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield jobs, trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)
    server.stop(None)


def test_submit_sends_the_file_then_creates_what_came_back(parsing: tuple[ParsingJobs, trainyard.Client]) -> None:
    jobs, client = parsing
    path = str(REPO / "cmd" / "tyctl" / "examples" / "mnist.yaml")
    got = client.submit(path, job_id="mnist-1", request_id="r1")
    assert got.name == "tenants/ml/jobs/mnist-1"
    assert jobs.parsed[0].parent == "tenants/ml"
    assert jobs.parsed[0].filename == path
    assert jobs.parsed[0].content == Path(path).read_text()
    create = jobs.created[0]
    assert (create.job.display_name, create.job_id, create.request_id) == ("parsed", "mnist-1", "r1")


def test_submit_many_names_jobs_and_counts_request_ids(parsing: tuple[ParsingJobs, trainyard.Client], tmp_path: Path) -> None:
    jobs, client = parsing
    (tmp_path / "sweep.yaml").write_text("name: a\n---\nname: b\n")
    got = client.submit_many(tmp_path, request_id="s")
    assert [j.name for j in got] == ["tenants/ml/jobs/a", "tenants/ml/jobs/b"]
    batch = jobs.created[0]
    assert [(r.job_id, r.request_id, r.job.name) for r in batch.requests] == [("a", "s-0", ""), ("b", "s-1", "")]

    got = client.submit_many(["name: c\n", {"name": "d", "spec": {}}], request_id="t")
    assert [j.name for j in got] == ["tenants/ml/jobs/c", "tenants/ml/jobs/d"]


def test_what_the_server_cannot_read_names_the_document(parsing: tuple[ParsingJobs, trainyard.Client]) -> None:
    _, client = parsing
    with pytest.raises(trainyard.InvalidArgument) as e:
        client.submit_many("name: a\n---\nspec: {replicas: [{imagee: tf}]}\n")
    assert e.value.violations[0].field == "documents[1].spec.replicas[0].imagee"


def test_submit_of_several_jobs_is_refused(parsing: tuple[ParsingJobs, trainyard.Client]) -> None:
    _, client = parsing
    with pytest.raises(ValueError, match="holds 2 jobs"):
        client.submit("name: a\n---\nname: b\n")
