"""Experiments: create from a tyctl-shaped document (the template read by
ParseJobFile), and trials as rows, best first."""

from __future__ import annotations

import json
from concurrent import futures
from pathlib import Path
from typing import Any, List

import grpc

import trainyard
from trainyard._proto.trainyard.v1 import experiment_pb2, experiment_pb2_grpc, job_pb2, job_pb2_grpc


class Jobs(job_pb2_grpc.JobServiceServicer):
    """ParseJobFile reads the template's JSON into a job (a stand-in for the
    server's lenient rules: one WORKER with the image)."""

    def __init__(self) -> None:
        self.parsed: List[str] = []

    def ParseJobFile(self, request: job_pb2.ParseJobFileRequest, context: grpc.ServicerContext) -> job_pb2.ParseJobFileResponse:
        self.parsed.append(request.content)
        doc = json.loads(request.content)
        rep = doc["spec"]["replicas"][0]
        job = job_pb2.Job(spec=job_pb2.JobSpec(replicas=[job_pb2.ReplicaSpec(
            type=job_pb2.REPLICA_TYPE_WORKER, image=rep["image"], args=rep.get("args", []))]))
        job.labels.update(doc.get("labels", {}))
        return job_pb2.ParseJobFileResponse(jobs=[job])


class Experiments(experiment_pb2_grpc.ExperimentServiceServicer):
    def __init__(self) -> None:
        self.created: List[experiment_pb2.CreateExperimentRequest] = []
        self.names: List[str] = []

    def CreateExperiment(self, request: experiment_pb2.CreateExperimentRequest,
                         context: grpc.ServicerContext) -> experiment_pb2.Experiment:
        self.created.append(request)
        return experiment_pb2.Experiment(name=f"{request.parent}/experiments/{request.experiment_id}", spec=request.experiment.spec,
                                         state=experiment_pb2.EXPERIMENT_STATE_RUNNING)

    def GetExperiment(self, request: experiment_pb2.GetExperimentRequest, context: grpc.ServicerContext) -> experiment_pb2.Experiment:
        self.names.append(request.name)
        return experiment_pb2.Experiment(name=request.name, spec=experiment_pb2.ExperimentSpec(
            parameters=[experiment_pb2.Parameter(name="lr", kind="double")],
            objective=experiment_pb2.Objective(metric="loss", direction="minimize")))

    def ListTrials(self, request: experiment_pb2.ListTrialsRequest, context: grpc.ServicerContext) -> experiment_pb2.ListTrialsResponse:
        return experiment_pb2.ListTrialsResponse(trials=[
            experiment_pb2.Trial(index=0, state=experiment_pb2.TRIAL_STATE_SUCCEEDED, objective=0.5, parameters={"lr": "0.1"}),
            experiment_pb2.Trial(index=1, state=experiment_pb2.TRIAL_STATE_EARLY_STOPPED, objective=0.9, best_value=0.9,
                                 best_step=3, last_step=3, parameters={"lr": "0.3"}),
            experiment_pb2.Trial(index=2, state=experiment_pb2.TRIAL_STATE_SUCCEEDED, objective=0.2, parameters={"lr": "0.01"}),
        ])

    def GetTrialMetrics(self, request: experiment_pb2.GetTrialMetricsRequest,
                        context: grpc.ServicerContext) -> experiment_pb2.GetTrialMetricsResponse:
        self.names.append(request.name)
        return experiment_pb2.GetTrialMetricsResponse(series=[experiment_pb2.MetricSeries(metric="loss", points=[
            experiment_pb2.MetricPoint(step=1, value=0.9), experiment_pb2.MetricPoint(step=2, value=0.5)])])


def serve(jobs: Jobs, exps: Experiments) -> Any:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    job_pb2_grpc.add_JobServiceServicer_to_server(jobs, server)  # type: ignore[no-untyped-call]
    experiment_pb2_grpc.add_ExperimentServiceServicer_to_server(exps, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def test_create_experiment_from_a_file(tmp_path: Path) -> None:
    jobs, exps = Jobs(), Experiments()
    server, port = serve(jobs, exps)
    try:
        path = tmp_path / "exp.yaml"
        path.write_text("""
name: lr-sweep
spec:
  template:
    labels: {team: vision}
    spec:
      replicas:
        - {type: worker, image: tf:2, args: ["--lr=${trial.lr}"]}
  parameters:
    - {name: lr, kind: double, scale: log, min: 0.0001, max: 0.1}
  objective: {metric: loss, direction: minimize}
  algorithm: {name: tpe}
  parallelism: 4
  maxTrials: 20
  seed: 7
""")
        client = trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)
        got = client.create_experiment(str(path))
        assert got.name == "tenants/ml/experiments/lr-sweep"
        req = exps.created[0]
        assert req.parent == "tenants/ml" and req.experiment_id == "lr-sweep"
        spec = req.experiment.spec
        assert spec.max_trials == 20 and spec.parallelism == 4 and spec.seed == 7
        assert spec.algorithm.name == "tpe"
        assert spec.parameters[0].scale == "log"
        assert spec.template.labels["team"] == "vision"
        assert list(spec.template.spec.replicas[0].args) == ["--lr=${trial.lr}"]
        assert json.loads(jobs.parsed[0])["spec"]["replicas"][0]["type"] == "worker", "the template went to ParseJobFile"

        client.create_experiment({"name": "a", "spec": {"maxTrials": 1}}, experiment_id="b")
        assert exps.created[1].experiment_id == "b"
    finally:
        server.stop(None)


def test_trials_best_first_and_metrics() -> None:
    server, port = serve(Jobs(), Experiments())
    try:
        client = trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)
        rows = client.trials("sweep")
        assert [r["trial"] for r in rows] == [2, 0, 1], "succeeded by loss, then the rest"
        assert rows[0] == {"trial": 2, "state": "SUCCEEDED", "loss": 0.2, "best": None, "bestStep": 0, "lastStep": 0, "lr": "0.01"}
        assert rows[2]["state"] == "EARLY_STOPPED" and rows[2]["best"] == 0.9 and rows[2]["bestStep"] == 3
        assert client.trial_metrics("sweep", 1) == {"loss": [(1, 0.9), (2, 0.5)]}
    finally:
        server.stop(None)
