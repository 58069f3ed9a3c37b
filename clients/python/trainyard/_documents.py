"""Reading what submit() is given: a dict, a YAML or JSON file, a Job.

A job document is the Job resource as the REST API takes it (``{"spec":
{"replicas": [...]}}``, lowerCamelCase or snake_case names), or just its
spec (``{"replicas": [...]}``). As in tyctl, enum values may be written
short and in any case (``WORKER``, ``worker``, ``OnFailure``). A document
with ``kind: TFJob`` is a Kubeflow TFJob manifest, which the server
converts.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Mapping, Tuple, Union

from google.protobuf import json_format, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from trainyard._proto.trainyard.v1 import job_pb2

Document = Union[Mapping[str, Any], str, "os.PathLike[str]", job_pb2.Job, job_pb2.JobSpec]


def load(doc: Document) -> Tuple[str, Any]:
    """Returns ("job", Job) or ("tfjob", Struct) for what submit() was given."""
    if isinstance(doc, job_pb2.Job):
        return "job", doc
    if isinstance(doc, job_pb2.JobSpec):
        return "job", job_pb2.Job(spec=doc)
    if isinstance(doc, (str, os.PathLike)):
        doc = _read_file(os.fspath(doc))
    if not isinstance(doc, Mapping):
        raise TypeError(f"submit() takes a dict, a file path or a trainyard.Job, not {type(doc).__name__}")
    kind = doc.get("kind")
    if kind == "TFJob":
        s = struct_pb2.Struct()
        s.update(json.loads(json.dumps(doc, default=str)))  # dates and the like as YAML wrote them
        return "tfjob", s
    if kind is not None:
        raise ValueError(f"kind {kind!r}: submit() takes Trainyard job documents and Kubeflow TFJobs (kind: TFJob)")
    body: Dict[str, Any] = dict(doc)
    if "replicas" in body and "spec" not in body:
        body = {"spec": body}
    _normalize(body, job_pb2.Job.DESCRIPTOR)
    return "job", json_format.ParseDict(body, job_pb2.Job())


def read_many(path: str) -> List[Any]:
    """The documents of a directory of job files (in name order) or of one
    file of several YAML documents; empty documents are skipped."""
    paths = [path]
    if os.path.isdir(path):
        paths = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.lower().endswith((".yaml", ".yml", ".json")) and os.path.isfile(os.path.join(path, f)))
        if not paths:
            raise ValueError(f"{path}: no *.yaml, *.yml or *.json files")
    docs: List[Any] = []
    for p in paths:
        with open(p) as f:
            text = f.read()
        if p.endswith(".json"):
            docs.append(json.loads(text))
            continue
        import yaml

        docs.extend(d for d in yaml.safe_load_all(text) if d is not None)
    return docs


def _read_file(path: str) -> Any:
    with open(path) as f:
        text = f.read()
    if path.endswith(".json"):
        return json.loads(text)
    import yaml

    return yaml.safe_load(text)


def _camel_to_upper_snake(s: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", s).upper()


def _normalize(obj: Dict[str, Any], md: Descriptor) -> None:
    """Forgives what people write by hand, as tyctl does, in place: short
    enum values (WORKER -> REPLICA_TYPE_WORKER), and numbers or booleans
    where a string is due (args: [--epochs, 10], a label 2024). Anything
    unknown is left for json_format to report by name."""
    for key, value in list(obj.items()):
        fd = md.fields_by_camelcase_name.get(key) or md.fields_by_name.get(key)
        if fd is None:
            continue
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            if isinstance(value, dict) and vfd.type == FieldDescriptor.TYPE_STRING:
                obj[key] = {k: _as_string(v) for k, v in value.items()}
            continue
        items = value if fd.label == FieldDescriptor.LABEL_REPEATED and isinstance(value, list) else [value]
        out = []
        for v in items:
            if fd.type == FieldDescriptor.TYPE_ENUM and isinstance(v, str):
                v = _enum_value(fd, v)
            elif fd.type == FieldDescriptor.TYPE_STRING:
                v = _as_string(v)
            elif fd.message_type is not None and isinstance(v, dict):
                _normalize(v, fd.message_type)
            out.append(v)
        obj[key] = out if items is value else out[0]


def _as_string(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return v


def _enum_value(fd: FieldDescriptor, v: str) -> str:
    names = fd.enum_type.values_by_name
    if v in names:
        return v
    prefix = _camel_to_upper_snake(fd.enum_type.name) + "_"
    for candidate in (v.upper(), _camel_to_upper_snake(v)):
        if prefix + candidate in names:
            return prefix + candidate
    return v
