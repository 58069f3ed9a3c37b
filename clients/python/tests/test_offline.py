"""Unit tests of the client's parts that need no server: documents, settings, errors, progress,
and watch resumption against an in-process fake JobService.

Run: python3 -m unittest discover -s clients/python/tests (the end-to-end
suite does, with Debian's python3-grpcio and python3-protobuf).
"""

import io
import os
import sys
import tempfile
import types
import unittest
from concurrent import futures
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trainyard  # noqa: E402
from trainyard import _documents, _progress, _settings  # noqa: E402
from trainyard import client as client_mod  # noqa: E402
from trainyard._proto.google.rpc import error_details_pb2, status_pb2  # noqa: E402
from trainyard._proto.trainyard.v1 import job_pb2, job_pb2_grpc  # noqa: E402
from trainyard.errors import InvalidArgument, NotFound, OutOfRange, from_rpc_error  # noqa: E402


class Documents(unittest.TestCase):
    def test_spec_dict_with_short_enums(self):
        kind, job = _documents.load({"replicas": [{"type": "worker", "count": 2, "image": "tf", "restartPolicy": "OnFailure"}],
                                     "successPolicy": "AllWorkers"})
        self.assertEqual(kind, "job")
        r = job.spec.replicas[0]
        self.assertEqual(r.type, job_pb2.REPLICA_TYPE_WORKER)
        self.assertEqual(r.restart_policy, job_pb2.RESTART_POLICY_ON_FAILURE)
        self.assertEqual(job.spec.success_policy, job_pb2.SUCCESS_POLICY_ALL_WORKERS)

    def test_job_resource_and_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("labels: {team: nlp}\nspec:\n  replicas:\n  - {type: CHIEF, image: tf}\n")
        try:
            kind, job = _documents.load(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(job.labels["team"], "nlp")
        self.assertEqual(job.spec.replicas[0].type, job_pb2.REPLICA_TYPE_CHIEF)

    def test_the_example_job_file(self):
        kind, job = _documents.load(str(Path(__file__).resolve().parents[3] / "cmd" / "tyctl" / "examples" / "mnist.yaml"))
        self.assertEqual(job.spec.replicas[0].args[1], "10", "numbers where strings are due become strings, as in tyctl")
        self.assertEqual(len(job.spec.replicas), 3)

    def test_tfjob_goes_as_it_is(self):
        kind, s = _documents.load({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}})
        self.assertEqual(kind, "tfjob")
        self.assertEqual(s["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 2)

    def test_other_kinds_and_typos(self):
        with self.assertRaises(ValueError):
            _documents.load({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"})
        with self.assertRaises(Exception) as cm:
            _documents.load({"replicas": [{"type": "WORKER", "gpus": 4}]})
        self.assertIn("gpus", str(cm.exception))


class FakeRpcError(grpc.RpcError):
    def __init__(self, code, details, trailers=()):
        self._code, self._details, self._trailers = code, details, trailers

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailers


class Many(unittest.TestCase):
    def test_directory_and_multi_document_file(self):
        d = tempfile.mkdtemp()
        Path(d, "b.yaml").write_text("name: b0\nspec: {replicas: [{type: worker, image: tf}]}\n---\n---\nreplicas: [{type: chief, image: tf}]\n")
        Path(d, "a.json").write_text('{"spec": {"replicas": [{"type": "WORKER", "image": "tf"}]}}')
        Path(d, "notes.txt").write_text("not a job")
        docs = _documents.read_many(d)
        self.assertEqual(len(docs), 3)
        self.assertEqual(docs[1]["name"], "b0")
        self.assertEqual(len(_documents.read_many(os.path.join(d, "b.yaml"))), 2)


class Errors(unittest.TestCase):
    def test_violations_from_status_details(self):
        st = status_pb2.Status(code=3, message="invalid")
        st.details.add().Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field="spec.replicas[0].count", description="0 is out of range 1..1000")]))
        err = from_rpc_error(FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, "invalid", (("grpc-status-details-bin", st.SerializeToString()),)))
        self.assertIsInstance(err, InvalidArgument)
        self.assertEqual([(v.field, v.description) for v in err.violations], [("spec.replicas[0].count", "0 is out of range 1..1000")])
        self.assertIn("spec.replicas[0].count", str(err))

    def test_codes(self):
        self.assertIsInstance(from_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no job")), NotFound)
        self.assertIsInstance(from_rpc_error(FakeRpcError(grpc.StatusCode.OUT_OF_RANGE, "afterEventId: too old")), OutOfRange)


class Settings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.env = dict(os.environ)
        for k in list(os.environ):
            if k.startswith("TYCTL_"):
                del os.environ[k]
        os.environ["TYCTL_CONFIG"] = os.path.join(self.dir, "config.yaml")

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)

    def test_argument_env_config_default(self):
        Path(os.environ["TYCTL_CONFIG"]).write_text("server: cfg:1\ntenant: from-config\ninsecure: true\nlogin: {idToken: stored-token}\n")
        s = _settings.resolve(None, None, None, None, None)
        self.assertEqual((s.server, s.tenant, s.token, s.insecure), ("cfg:1", "from-config", "stored-token", True))
        os.environ.update({"TYCTL_SERVER": "env:2", "TYCTL_TOKEN": "Bearer env-token", "TYCTL_INSECURE": "false"})
        s = _settings.resolve(None, None, None, None, None)
        self.assertEqual((s.server, s.tenant, s.token, s.insecure), ("env:2", "from-config", "env-token", False))
        s = _settings.resolve("arg:3", "arg-token", "arg-tenant", True, None)
        self.assertEqual((s.server, s.tenant, s.token, s.insecure), ("arg:3", "arg-tenant", "arg-token", True))

    def test_no_config(self):
        s = _settings.resolve(None, None, None, None, None)
        self.assertEqual((s.server, s.token), (_settings.DEFAULT_SERVER, None))


def _job(state: int, active: int) -> job_pb2.Job:
    j = job_pb2.Job(name="tenants/t/jobs/mnist")
    j.status.state = state
    j.status.replica_counts.add(type=job_pb2.REPLICA_TYPE_WORKER, active=active, pending=2 - active)
    return j


class _Handle:
    def __init__(self):
        self.shown = []

    def update(self, obj):
        self.shown.append(obj)


class Progress(unittest.TestCase):
    """What Client.wait shows: one line per change, kept current in place."""

    def setUp(self):
        self.saved = {k: sys.modules.get(k) for k in ("IPython", "IPython.display")}

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    def fake_ipython(self, kernel: bool) -> _Handle:
        handle = _Handle()
        shell = types.SimpleNamespace(kernel=object()) if kernel else types.SimpleNamespace()
        ipython = types.ModuleType("IPython")
        ipython.get_ipython = lambda: shell
        display = types.ModuleType("IPython.display")

        def show(obj, display_id=None):
            self.assertTrue(display_id)
            handle.update(obj)
            return handle

        display.display = show
        sys.modules["IPython"], sys.modules["IPython.display"] = ipython, display
        return handle

    def test_jupyter_updates_one_display(self):
        handle = self.fake_ipython(kernel=True)
        out = io.StringIO()
        p = _progress.Progress(out=out)
        p.update(_job(job_pb2.JOB_STATE_STARTING, 0))
        p.update(_job(job_pb2.JOB_STATE_STARTING, 0))  # unchanged: not shown again
        p.update(_job(job_pb2.JOB_STATE_RUNNING, 2))
        p.close()
        self.assertEqual(handle.shown, ["", "mnist: STARTING  worker 0/2", "mnist: RUNNING  worker 2/2"])
        self.assertEqual(out.getvalue(), "", "nothing printed beside the display")

    def test_ipython_without_a_kernel_prints_lines(self):
        self.fake_ipython(kernel=False)  # a terminal IPython: no display to update
        out = io.StringIO()
        p = _progress.Progress(out=out)
        p.update(_job(job_pb2.JOB_STATE_QUEUED, 0))
        p.update(_job(job_pb2.JOB_STATE_SUCCEEDED, 2))
        self.assertEqual(out.getvalue(), "mnist: QUEUED  worker 0/2\nmnist: SUCCEEDED  worker 2/2\n")

    def test_terminal_rewrites_its_line(self):
        sys.modules.pop("IPython", None)

        class Tty(io.StringIO):
            def isatty(self):
                return True

        out = Tty()
        p = _progress.Progress(out=out)
        p.update(_job(job_pb2.JOB_STATE_STARTING, 1))
        p.update(_job(job_pb2.JOB_STATE_RUNNING, 2))
        p.close()
        self.assertEqual(out.getvalue(), "\r\x1b[Kmnist: STARTING  worker 1/2\r\x1b[Kmnist: RUNNING  worker 2/2\n")

    def test_disabled_shows_nothing(self):
        handle = self.fake_ipython(kernel=True)
        out = io.StringIO()
        p = _progress.Progress(enabled=False, out=out)
        p.update(_job(job_pb2.JOB_STATE_RUNNING, 2))
        p.close()
        self.assertEqual((handle.shown, out.getvalue()), ([], ""))


class _ScriptedJobs(job_pb2_grpc.JobServiceServicer):
    """An in-process JobService whose WatchJob and WatchJobs play one
    script per call."""

    def __init__(self, gets, scripts):
        self.gets, self.scripts, self.afters, self.requests = gets, scripts, [], []

    def GetJob(self, request, context):
        return self.gets.pop(0)

    def WatchJob(self, request, context):
        yield from self._play(request, context)

    def WatchJobs(self, request, context):
        yield from self._play(request, context)

    def _play(self, request, context):
        self.afters.append(request.after_event_id)
        self.requests.append(request)
        send, end = self.scripts[len(self.afters) - 1]
        yield from send
        if end is not None:
            context.abort(*end)


class _InProcess(unittest.TestCase):
    def client(self, jobs: _ScriptedJobs) -> trainyard.Client:
        """A client of jobs served in-process, stopped when the test ends."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        job_pb2_grpc.add_JobServiceServicer_to_server(jobs, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.addCleanup(server.stop, None)
        return trainyard.Client(f"127.0.0.1:{port}", token="t", tenant="ml", insecure=True)


class WatchBookmarks(_InProcess):
    """A watch (a tenant's, a job's) asks for bookmarks, reopens after the
    latest one and yields none of them."""

    def test_a_resume_starts_after_the_bookmark(self):
        job = job_pb2.Job(name="tenants/ml/jobs/j", labels={"team": "nlp"})
        event = job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=41, reason="Running"), job=job)
        later = job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=950, reason="Succeeded"), job=job)
        jobs = _ScriptedJobs([], [
            ([event, job_pb2.WatchJobResponse(bookmark_event_id=900)], (grpc.StatusCode.UNAVAILABLE, "stream lifetime reached")),
            ([later], (grpc.StatusCode.PERMISSION_DENIED, "no longer a member")),
        ])
        got = []
        with self.client(jobs) as c:
            real_sleep, client_mod.time.sleep = client_mod.time.sleep, lambda _: None
            try:
                with self.assertRaises(trainyard.PermissionDenied):
                    for msg in c.watch(filter="labels.team = nlp", after_event_id=40):
                        got.append(msg.event.id)
            finally:
                client_mod.time.sleep = real_sleep
        self.assertEqual(got, [41, 950], "events only")
        self.assertEqual(jobs.afters, [40, 900], "reopened after the bookmark")
        self.assertTrue(all(r.bookmarks for r in jobs.requests))

    def test_a_job_watch_resumes_after_the_bookmark(self):
        """A quiet job's watch moves with the tenant's position, so a
        resume stays within what event retention keeps."""
        running = job_pb2.Job(name="tenants/ml/jobs/j", status=job_pb2.JobStatus(state=job_pb2.JOB_STATE_RUNNING))
        done = job_pb2.Job(name="tenants/ml/jobs/j", status=job_pb2.JobStatus(state=job_pb2.JOB_STATE_SUCCEEDED))
        jobs = _ScriptedJobs([], [
            ([job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=41, reason="JobRunning"), job=running),
              job_pb2.WatchJobResponse(bookmark_event_id=900)], (grpc.StatusCode.UNAVAILABLE, "stream lifetime reached")),
            ([job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=950, reason="JobSucceeded"), job=done)], None),
        ])
        with self.client(jobs) as c:
            real_sleep, client_mod.time.sleep = client_mod.time.sleep, lambda _: None
            try:
                got = [msg.event.id for msg in c.watch("j", after_event_id=40)]
            finally:
                client_mod.time.sleep = real_sleep
        self.assertEqual(got, [41, 950], "events only, and the watch ends with the job")
        self.assertEqual(jobs.afters, [40, 900], "reopened after the bookmark")
        self.assertTrue(all(r.bookmarks for r in jobs.requests))


class WaitAcrossRetention(_InProcess):
    """wait() outlives a resume the server refuses (event retention passed
    the last event seen during an outage); watch() raises it."""

    def test_a_resume_behind_retention_watches_the_job_afresh(self):
        running = job_pb2.Job(name="tenants/ml/jobs/j", status=job_pb2.JobStatus(state=job_pb2.JOB_STATE_RUNNING))
        done = job_pb2.Job(name="tenants/ml/jobs/j", status=job_pb2.JobStatus(state=job_pb2.JOB_STATE_SUCCEEDED))
        event = job_pb2.WatchJobResponse(event=job_pb2.JobEvent(id=41, reason="Running"), job=running)
        jobs = _ScriptedJobs([running, done], [
            ([job_pb2.WatchJobResponse(job=running), event], (grpc.StatusCode.UNAVAILABLE, "server shutting down")),
            ([], (grpc.StatusCode.OUT_OF_RANGE, "afterEventId: events up to position 60 were deleted by event retention")),
            ([job_pb2.WatchJobResponse(job=done)], None),
        ])
        with self.client(jobs) as c:
            real_sleep, client_mod.time.sleep = client_mod.time.sleep, lambda _: None
            try:
                final = c.wait("j", timeout=30, progress=False)
            finally:
                client_mod.time.sleep = real_sleep
        self.assertEqual(jobs.afters, [0, 41, 0], "resumed after the last event, then afresh")
        self.assertEqual(final.status.state, job_pb2.JOB_STATE_SUCCEEDED)

    def test_a_plain_watch_still_raises(self):
        jobs = _ScriptedJobs([], [([], (grpc.StatusCode.OUT_OF_RANGE, "afterEventId: gone"))])
        with self.client(jobs) as c:
            with self.assertRaises(OutOfRange):
                list(c.watch("j", after_event_id=7))


if __name__ == "__main__":
    unittest.main()
