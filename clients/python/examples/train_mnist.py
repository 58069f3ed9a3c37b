"""Train on Trainyard from a notebook (run it cell by cell, or as a script).

Connects with tyctl's settings: run `tyctl login` once (or set TYCTL_SERVER,
TYCTL_TENANT and TYCTL_TOKEN). The end-to-end suite runs this file against
a live server on the local cluster (integration/e2e/python_test.go).
"""
import os

import trainyard

# %% Connect: the server, tenant and token tyctl uses.
ty = trainyard.Client()

# %% Submit a chief and two workers; the workers say when they are ready.
job = ty.submit({
    "replicas": [
        {"type": "CHIEF", "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "/opt/mnist.py"]},
        {"type": "WORKER", "count": 2, "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "/opt/mnist.py"],
         "readinessProbe": {"tcpSocket": {}}},
    ],
})
print("submitted", job.name)

# %% Wait for it: progress shows while it runs; a failure raises JobFailed with the log tail.
done = ty.wait(job, timeout=600)
print("finished", trainyard.JobState.Name(done.status.state))

# %% Read the chief's log. (Workers still running when the chief finished are
# deleted with the job's end, by the default cleanPodPolicy, and their logs
# with them; the chief's pod is kept until the job's TTL.)
for line in ty.logs(done, replica="chief-0"):
    print("chief-0 |", line)

# %% A Kubeflow TFJob manifest runs as it is.
tfjob = ty.submit(os.path.join(os.path.dirname(__file__), "tf_job_mnist.yaml"), job_id=job.name.rsplit("/", 1)[-1] + "-tf")
print("tfjob finished", trainyard.JobState.Name(ty.wait(tfjob, timeout=600).status.state))

# %% A mistake is an exception that names each field.
try:
    ty.submit({"replicas": [{"type": "WORKER", "count": -1, "image": ""}]})
except trainyard.InvalidArgument as e:
    for v in e.violations:
        print("invalid:", v.field, "-", v.description)
