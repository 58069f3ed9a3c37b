// Package tfjob converts a Kubeflow TFJob (kubeflow.org/v1, as the
// training operator v1 defines it) into a Trainyard job, so that a team
// moving from Kubeflow submits its manifests unchanged. It is pure: bytes
// in, a job.Job and a list of issues out; no I/O, no cluster.
//
// # What maps where
//
//	TFJob                                         Trainyard job
//	metadata.name, metadata.labels                id (unless the request gives one), labels
//	tfReplicaSpecs.{Chief|Master,Worker,PS,        replicas CHIEF, WORKER, PS, EVALUATOR (keys in any
//	  Evaluator}                                    case, as the operator normalizes them)
//	  .replicas (default 1), .restartPolicy        count, restartPolicy (Never | OnFailure |
//	                                                ExitCode | Always; ExitCode retries 128-255 in both)
//	  .template.metadata.labels, .annotations      podLabels, podAnnotations
//	  .template.spec.nodeSelector, .tolerations,   nodeSelector, tolerations, affinity
//	    .affinity.nodeAffinity
//	  .template.spec.terminationGracePeriodSeconds terminationGracePeriodSeconds (the longest)
//	  .template.spec.priorityClassName             priority, through Options.PriorityClasses
//	  container "tensorflow" (or the only one):
//	    image, command, args, workingDir           the same
//	    ports[name=tfjob-port].containerPort       port (default 2222 in both)
//	    env value, valueFrom.secretKeyRef          env, a tenant secret's key (a Secret of the
//	                                                tenant's namespace is the tenant secret of that id)
//	    resources cpu, memory, nvidia.com/gpu      resources (a limit alone is also the request)
//	    volumeMounts of a PersistentVolumeClaim    checkpoint: one claim, one path, every replica
//	    volumeMounts of a Secret                   secretVolumes
//	    liveness/readiness/startupProbe            the same probes (exec, tcpSocket, httpGet;
//	                                                named ports resolved)
//	    securityContext.privileged                 privileged
//	runPolicy.backoffLimit (unset: 3, not          runPolicy.backoffLimit
//	  TFJob's unlimited), activeDeadlineSeconds,   activeDeadlineSeconds, ttlSecondsAfterFinished,
//	  ttlSecondsAfterFinished, cleanPodPolicy       cleanPodPolicy (default Running in both)
//	runPolicy.schedulingPolicy.priorityClass       priority, through Options.PriorityClasses
//	successPolicy ("" | AllWorkers)                successPolicy (CHIEF_OR_WORKER0 | ALL_WORKERS)
//
// # Nothing is dropped silently
//
// Every field of the manifest ends in one of three places: carried over
// (above), or an Issue naming it by path, of one of two severities:
//
//   - Unsupported: Trainyard cannot honour it as written and the job would
//     run differently: a sidecar, an init container, an emptyDir, a
//     ServiceAccount with rights, a pod securityContext, a second claim,
//     an unknown PriorityClass, a field the schema does not have (a typo).
//     The API refuses the import with one field violation each, unless
//     the caller allows warnings; then they are warnings.
//   - Note: the field has no counterpart by design and the training runs
//     the same: metadata.namespace (the tenant's namespace is used),
//     status, server-set metadata, Volcano's queue and gang size
//     (Trainyard's scheduler admits all replicas together), the pod
//     template's restartPolicy (the replica's decides, as in TFJob), a
//     Master's TF_CONFIG key ("chief"). Always warnings.
//
// Fields the converter does not read are found generically: after taking
// what it carries over, it marshals what is left of each pod spec,
// container and probe and reports every field still set (leftovers).
// Fields Kubernetes adds in later versions are reported the same way, and
// fields no version has are reported from strict decoding.
//
// What the converter leaves to the API: defaults and validation of the
// resulting job (job.Validate), whether the tenant secrets it names exist,
// and the tenant's quota.
package tfjob
