"""Parameters that flow between the jobs of a pipeline, read and written
inside a job's pods (no server call, no token).

A job's outputs are what its primary replica (the chief, else worker 0)
leaves in its termination message, ``/dev/termination-log``, as it exits:
Kubernetes keeps at most 4 KiB of it, and Trainyard reads it as a JSON
object (or ``key=value`` lines) into ``status.outputs``. A job that depends
on it (``spec.dependsOn``) gets, once admitted, every dependency's result
in its environment; :func:`dependencies` reads them back::

    # in prep's chief
    trainyard.pipeline.set_outputs(dataset="gs://datasets/mnist/v7", rows=60000)

    # in train, which depends on prep
    prep = trainyard.pipeline.dependencies()["prep"]
    prep.state, prep.exit_codes, prep.outputs["dataset"]

Outside a pod, ``Client.get(job).status.outputs`` and
``.status.dependencies`` hold the same.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

TERMINATION_LOG = "/dev/termination-log"
ENV = "TRAINYARD_DEPENDENCIES"


@dataclass(frozen=True)
class Dependency:
    """A dependency's result as the dependent was admitted."""

    job: str
    condition: str
    state: str
    reason: str = ""
    exit_codes: Dict[str, int] = field(default_factory=dict)
    outputs: Dict[str, str] = field(default_factory=dict)


def dependencies(environ: Optional[Mapping[str, str]] = None) -> Dict[str, Dependency]:
    """The results of this job's dependencies, by job id; empty for a job
    without any."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV, "")
    if not raw:
        return {}
    out: Dict[str, Dependency] = {}
    for r in json.loads(raw):
        out[r["job"]] = Dependency(
            job=r["job"], condition=r.get("condition", "SUCCEEDED"), state=r.get("state", ""),
            reason=r.get("reason", ""), exit_codes=dict(r.get("exitCodes") or {}), outputs=dict(r.get("outputs") or {}))
    return out


def set_outputs(path: str = TERMINATION_LOG, **outputs: Any) -> None:
    """Writes outputs as this job's termination message (a JSON object),
    for the jobs that depend on it. Call it in the chief (else worker 0)
    as it finishes. Keys are letters, digits and '_' starting with a
    letter; values are strings (others are written as JSON), at most
    1 KiB each, 32 entries and 4 KiB in all: the rest is left out."""
    text = json.dumps({k: v if isinstance(v, str) else json.dumps(v) for k, v in outputs.items()}, sort_keys=True)
    if len(text.encode()) > 4096:
        raise ValueError(f"outputs take {len(text.encode())} bytes; Kubernetes keeps at most 4096 of a termination message")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
