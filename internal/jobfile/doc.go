// Package jobfile reads job files: the Job resource as CreateJob takes it,
// written by hand in YAML or JSON. It is the one place the lenient rules
// live; tyctl, the console and the Python client send the file's text to
// the ParseJobFile RPC, which calls Parse, and create what comes back.
//
// A file is one YAML document, several separated by a line "---", or one
// JSON value; documents with nothing but comments are skipped. Each
// document is read strictly and within a budget by internal/document, then
// normalized before protojson reads it. The rules forgive what people
// write by hand and report, by path, what they cannot:
//
//   - enum values in short form or any case: WORKER, worker, ON_FAILURE,
//     OnFailure, on-failure become REPLICA_TYPE_WORKER,
//     RESTART_POLICY_ON_FAILURE (ParseEnum);
//   - numbers and booleans where the API wants a string (cpu: 2,
//     args: [--epochs, 10], a label value 2024) become strings;
//   - field names are lowerCamelCase or the proto's snake_case, as protojson
//     accepts; an unknown one is an error with a suggestion, because a typo
//     silently dropped (gpus: 4) is a job that runs without GPUs.
//
// Every problem is a Problem whose Field starts with the document's index
// among the non-empty documents, "documents[1].spec.replicas[0].imagee",
// and all of a file's problems come back at once. Parse validates nothing
// beyond reading: CreateJob's validation applies to what it returns.
package jobfile
