"""Reading what submit() is given: a dict, a YAML or JSON file or text, a Job.

The client does not read job files itself: a file, YAML text or a dict is
sent to the server's ParseJobFile, which applies the lenient rules every
client shares (short enum values in any case, numbers where strings are
due, snake_case or camelCase names, unknown fields named with a
suggestion) and returns the jobs; submit() then creates them. A dict may
also be just a job's spec (``{"replicas": [...]}``). A document with
``kind: TFJob`` is a Kubeflow TFJob manifest, which the server converts.
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass
from typing import Any, List, Mapping, Tuple, Union

from google.protobuf import struct_pb2

from trainyard._proto.trainyard.v1 import job_pb2

Document = Union[Mapping[str, Any], str, "os.PathLike[str]", job_pb2.Job, job_pb2.JobSpec]


@dataclass(frozen=True)
class JobFile:
    """A job file's text, for ParseJobFile; name is for messages."""

    content: str
    name: str = ""


def load(doc: Document) -> Tuple[str, Any]:
    """Returns ("job", Job), ("tfjob", Struct) or ("file", JobFile) for what
    submit() was given. A str holding a line break is YAML or JSON text,
    any other str a file's path."""
    if isinstance(doc, job_pb2.Job):
        return "job", doc
    if isinstance(doc, job_pb2.JobSpec):
        return "job", job_pb2.Job(spec=doc)
    if isinstance(doc, (str, os.PathLike)):
        f = _read(doc)
        tf = _tfjob(f)
        return ("tfjob", tf) if tf is not None else ("file", f)
    if not isinstance(doc, Mapping):
        raise TypeError(f"submit() takes a dict, a file path, YAML text or a trainyard.Job, not {type(doc).__name__}")
    kind = doc.get("kind")
    if kind == "TFJob":
        return "tfjob", _struct(doc)
    if kind is not None:
        raise ValueError(f"kind {kind!r}: submit() takes Trainyard job documents and Kubeflow TFJobs (kind: TFJob)")
    body = dict(doc)
    if "replicas" in body and "spec" not in body:
        body = {"spec": body}
    return "file", JobFile(json.dumps(body, default=_scalar))


def files(path: str) -> List[JobFile]:
    """The job files of a directory (``*.yaml``, ``*.yml``, ``*.json``, in
    name order), or the one file at path."""
    paths = [path]
    if os.path.isdir(path):
        paths = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.lower().endswith((".yaml", ".yml", ".json")) and os.path.isfile(os.path.join(path, f)))
        if not paths:
            raise ValueError(f"{path}: no *.yaml, *.yml or *.json files")
    return [_read(p) for p in paths]


def _read(doc: Union[str, "os.PathLike[str]"]) -> JobFile:
    if isinstance(doc, str) and "\n" in doc:
        return JobFile(doc)
    path = os.fspath(doc)
    with open(path) as f:
        return JobFile(f.read(), path)


def _tfjob(f: JobFile) -> Any:
    """The TFJob manifest f holds, as a Struct, or None when f is not one
    (the server reads everything else). Only the kind is looked at."""
    if "TFJob" not in f.content:
        return None
    import yaml

    try:
        docs = [d for d in yaml.safe_load_all(f.content) if d is not None]
    except yaml.YAMLError:
        return None  # the server says what is wrong
    if len(docs) == 1 and isinstance(docs[0], Mapping) and docs[0].get("kind") == "TFJob":
        return _struct(docs[0])
    return None


def _struct(doc: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(doc, default=_scalar)))
    return s


def _scalar(v: Any) -> Any:
    """Dates and the like as YAML wrote them."""
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return str(v)
