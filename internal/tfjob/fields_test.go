package tfjob

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// worker is a TFJob of one Worker replica type; extra is spliced into the
// worker's replica spec, container and pod spec (each indented for its
// place), top into the TFJob's spec.
func worker(top, replica, pod, container string) string {
	ind := func(s string, n int) string {
		if s == "" {
			return ""
		}
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+pad) + "\n"
	}
	return "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: t\nspec:\n" + ind(top, 2) +
		"  tfReplicaSpecs:\n    Worker:\n" + ind(replica, 6) +
		"      template:\n        spec:\n" + ind(pod, 10) +
		"          containers:\n          - name: tensorflow\n            image: tf:2.16\n" + ind(container, 12)
}

const (
	wAt = "spec.tfReplicaSpecs.Worker"
	pAt = wAt + ".template.spec"
	cAt = pAt + ".containers[0]"
)

func TestConvertFields(t *testing.T) {
	for name, tc := range map[string]struct {
		manifest string
		check    func(t *testing.T, s job.Spec)
		issues   []string // "severity field", in order
	}{
		// Replica types.
		"Chief, Worker, PS, Evaluator": {
			manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n" +
				"    Evaluator: {template: {spec: {containers: [{name: tensorflow, image: e}]}}}\n" +
				"    PS: {template: {spec: {containers: [{name: tensorflow, image: p}]}}}\n" +
				"    Worker: {replicas: 3, template: {spec: {containers: [{name: tensorflow, image: w}]}}}\n" +
				"    Chief: {template: {spec: {containers: [{name: tensorflow, image: c}]}}}\n",
			check: func(t *testing.T, s job.Spec) {
				var got []string
				for _, r := range s.Replicas {
					got = append(got, string(r.Type)+"="+r.Image)
				}
				require.Equal(t, []string{"chief=c", "worker=w", "ps=p", "evaluator=e"}, got)
				require.Equal(t, int32(3), s.Replicas[1].Count)
				require.Equal(t, int32(1), s.Replicas[0].Count, "replicas defaults to 1, as in TFJob")
			},
		},
		"Chief and Master both": {
			manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n" +
				"    Chief: {template: {spec: {containers: [{name: tensorflow, image: c}]}}}\n" +
				"    Master: {template: {spec: {containers: [{name: tensorflow, image: m}]}}}\n",
			issues: []string{"unsupported spec.tfReplicaSpecs.Master"},
		},
		"unknown replica type": {
			manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n" +
				"    Worker: {template: {spec: {containers: [{name: tensorflow, image: w}]}}}\n" +
				"    Launcher: {template: {spec: {containers: [{name: tensorflow, image: l}]}}}\n",
			issues: []string{"unsupported spec.tfReplicaSpecs.Launcher"},
		},
		"no replica specs": {manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: {}\n", issues: []string{"unsupported spec.tfReplicaSpecs"}},
		"zero replicas":    {manifest: worker("", "replicas: 0", "", ""), issues: []string{"unsupported " + wAt + ".replicas"}},

		// Run policy.
		"backoffLimit": {manifest: worker("runPolicy: {backoffLimit: 0}", "restartPolicy: OnFailure", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, int32(0), s.RunPolicy.BackoffLimit) }},
		"backoffLimit unset with restarts": {manifest: worker("", "restartPolicy: OnFailure", "", ""),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, int32(job.DefaultBackoffLimit), s.RunPolicy.BackoffLimit)
			},
			issues: []string{"note spec.runPolicy.backoffLimit"}},
		"activeDeadlineSeconds": {manifest: worker("runPolicy: {activeDeadlineSeconds: 3600}", "", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, int64(3600), *s.RunPolicy.ActiveDeadlineSeconds) }},
		"ttlSecondsAfterFinished": {manifest: worker("runPolicy: {ttlSecondsAfterFinished: 60}", "", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, int32(60), *s.RunPolicy.TTLSecondsAfterFinished) }},
		"cleanPodPolicy None": {manifest: worker("runPolicy: {cleanPodPolicy: None}", "", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, job.CleanNone, s.RunPolicy.CleanPodPolicy) }},
		"cleanPodPolicy unknown": {manifest: worker("runPolicy: {cleanPodPolicy: Some}", "", "", ""),
			issues: []string{"unsupported spec.runPolicy.cleanPodPolicy"}},
		"priorityClass known": {manifest: worker("runPolicy: {schedulingPolicy: {priorityClass: low}}", "", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, int32(-100), s.Priority) }},
		"priorityClass unknown": {manifest: worker("runPolicy: {schedulingPolicy: {priorityClass: urgent}}", "", "", ""),
			issues: []string{"unsupported spec.runPolicy.schedulingPolicy.priorityClass"}},
		"pod priorityClassName agrees": {manifest: worker("runPolicy: {schedulingPolicy: {priorityClass: high}}", "", "priorityClassName: high", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, int32(500), s.Priority) }},
		"pod priorityClassName differs": {manifest: worker("runPolicy: {schedulingPolicy: {priorityClass: high}}", "", "priorityClassName: low", ""),
			issues: []string{"unsupported " + pAt + ".priorityClassName"}},
		"minAvailable of all replicas": {manifest: worker("runPolicy: {schedulingPolicy: {minAvailable: 1}}", "", "", "")},
		"schedulerName volcano":        {manifest: worker("", "", "schedulerName: volcano", ""), issues: []string{"note " + pAt + ".schedulerName"}},

		// Restart and success policies.
		"restartPolicy ExitCode": {manifest: worker("", "restartPolicy: ExitCode", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, job.RestartExitCode, s.Replicas[0].RestartPolicy) }, issues: []string{"note spec.runPolicy.backoffLimit"}},
		"restartPolicy Always": {manifest: worker("runPolicy: {backoffLimit: 2}", "restartPolicy: Always", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, job.RestartAlways, s.Replicas[0].RestartPolicy) }},
		"restartPolicy unset is Never": {manifest: worker("", "", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, job.RestartNever, s.Replicas[0].RestartPolicy) }},
		"restartPolicy unknown":      {manifest: worker("", "restartPolicy: Sometimes", "", ""), issues: []string{"unsupported " + wAt + ".restartPolicy"}},
		"pod template restartPolicy": {manifest: worker("", "", "restartPolicy: OnFailure", ""), issues: []string{"note " + pAt + ".restartPolicy"}},
		"successPolicy AllWorkers": {manifest: worker("successPolicy: AllWorkers", "", "", ""),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, job.SuccessAllWorkers, s.SuccessPolicy) }},
		"successPolicy unknown": {manifest: worker("successPolicy: Majority", "", "", ""), issues: []string{"unsupported spec.successPolicy"}},

		// The tensorflow container.
		"tfjob-port": {manifest: worker("", "", "", "ports: [{name: tfjob-port, containerPort: 5000}]"),
			check: func(t *testing.T, s job.Spec) { require.Equal(t, int32(5000), s.Replicas[0].Port) }},
		"another port is declared only": {manifest: worker("", "", "", "ports: [{name: metrics, containerPort: 9100}]"),
			issues: []string{"note " + cAt + ".ports[0]"}},
		"hostPort": {manifest: worker("", "", "", "ports: [{name: tfjob-port, containerPort: 2222, hostPort: 2222}]"),
			issues: []string{"unsupported " + cAt + ".ports[0].hostPort"}},
		"command and args": {manifest: worker("", "", "", "command: [python, t.py]\nargs: [--lr, '0.1']"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, []string{"python", "t.py"}, s.Replicas[0].Command)
				require.Equal(t, []string{"--lr", "0.1"}, s.Replicas[0].Args)
			}},
		"env secretKeyRef": {manifest: worker("", "", "", "env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: hf, key: token}}}]"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, []job.EnvVar{{Name: "TOKEN", Secret: &job.SecretKeyRef{Secret: "hf", Key: "token"}}}, s.Replicas[0].Env)
			}},
		"env secretKeyRef optional": {manifest: worker("", "", "", "env: [{name: T, valueFrom: {secretKeyRef: {name: hf, key: t, optional: true}}}]"),
			issues: []string{"unsupported " + cAt + ".env[0].valueFrom.secretKeyRef.optional"}},
		"env configMapKeyRef": {manifest: worker("", "", "", "env: [{name: T, valueFrom: {configMapKeyRef: {name: c, key: k}}}]"),
			issues: []string{"unsupported " + cAt + ".env[0].valueFrom"}},
		"resources requests and limits": {manifest: worker("", "", "", "resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: '2', memory: 2Gi}}"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, job.Resources{CPU: "500m", Memory: "1Gi", CPULimit: "2", MemoryLimit: "2Gi"}, s.Replicas[0].Resources)
			}},
		"limits only are requests too": {manifest: worker("", "", "", "resources: {limits: {cpu: '1', memory: 1Gi, nvidia.com/gpu: 4}}"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, job.Resources{CPU: "1", CPULimit: "1", Memory: "1Gi", MemoryLimit: "1Gi", GPU: 4}, s.Replicas[0].Resources)
			}},
		"memory request without limit": {manifest: worker("", "", "", "resources: {requests: {memory: 4Gi}}"),
			issues: []string{"note " + cAt + ".resources.limits"}},
		"GPU request differs from limit": {manifest: worker("", "", "", "resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}"),
			issues: []string{"unsupported " + cAt + ".resources.requests"}},
		"fractional GPU": {manifest: worker("", "", "", "resources: {limits: {nvidia.com/gpu: 500m}}"),
			issues: []string{"unsupported " + cAt + ".resources.limits"}},
		"imagePullPolicy IfNotPresent on a tag is the default": {manifest: worker("", "", "", "imagePullPolicy: IfNotPresent")},
		"imagePullPolicy Never":                                {manifest: worker("", "", "", "imagePullPolicy: Never"), issues: []string{"unsupported " + cAt + ".imagePullPolicy"}},
		"privileged": {manifest: worker("", "", "", "securityContext: {privileged: true}"),
			check: func(t *testing.T, s job.Spec) { require.True(t, s.Replicas[0].Privileged) }},
		"restricted security context is Trainyard's own": {manifest: worker("", "", "securityContext: {seccompProfile: {type: RuntimeDefault}}",
			"securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}")},
		"one container with another name": {
			manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: trainer, image: w}]}}}\n",
			issues:   []string{"note spec.tfReplicaSpecs.Worker.template.spec.containers[0].name"}},
		"several containers, none tensorflow": {
			manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: a, image: w}, {name: b, image: w}]}}}\n",
			issues:   []string{"unsupported spec.tfReplicaSpecs.Worker.template.spec.containers"}},
		"probes with a named port": {manifest: worker("", "", "", "ports: [{name: tfjob-port, containerPort: 2000}]\nreadinessProbe: {tcpSocket: {port: tfjob-port}}\nlivenessProbe: {grpc: {port: 2000}}"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, &job.Probe{TCPSocket: &job.TCPSocketAction{Port: 2000}}, s.Replicas[0].ReadinessProbe)
				require.Nil(t, s.Replicas[0].LivenessProbe)
			},
			issues: []string{"unsupported " + cAt + ".livenessProbe.grpc.port"}},
		"probe on an undeclared port name": {manifest: worker("", "", "", "readinessProbe: {httpGet: {path: /, port: http}}"),
			issues: []string{"unsupported " + cAt + ".readinessProbe.httpGet.port"}},

		// Volumes and placement.
		"PVC becomes the checkpoint": {manifest: worker("", "", "volumes: [{name: data, persistentVolumeClaim: {claimName: ckpt}}]", "volumeMounts: [{name: data, mountPath: /data}]"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, &job.CheckpointVolume{ClaimName: "ckpt", MountPath: "/data"}, s.Checkpoint)
			}},
		"two PVCs": {manifest: worker("", "", "volumes: [{name: a, persistentVolumeClaim: {claimName: a}}, {name: b, persistentVolumeClaim: {claimName: b}}]",
			"volumeMounts: [{name: a, mountPath: /a}, {name: b, mountPath: /b}]"),
			issues: []string{"unsupported " + cAt + ".volumeMounts[1]"}},
		"PVC with subPath": {manifest: worker("", "", "volumes: [{name: a, persistentVolumeClaim: {claimName: a}}]", "volumeMounts: [{name: a, mountPath: /a, subPath: x}]"),
			issues: []string{"unsupported " + cAt + ".volumeMounts[0].subPath"}},
		"unmounted volume": {manifest: worker("", "", "volumes: [{name: a, persistentVolumeClaim: {claimName: a}}]", ""),
			issues: []string{"note " + pAt + ".volumes[0]"}},
		"secret volume": {manifest: worker("", "", "volumes: [{name: s, secret: {secretName: gcs}}]", "volumeMounts: [{name: s, mountPath: /s}]"),
			check: func(t *testing.T, s job.Spec) {
				require.Equal(t, []job.SecretVolume{{Secret: "gcs", MountPath: "/s"}}, s.Replicas[0].SecretVolumes)
			}},
		"nodeSelector, tolerations, node affinity": {manifest: worker("", "",
			"nodeSelector: {pool: gpu}\ntolerations: [{key: spot, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]\n"+
				"affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}", ""),
			check: func(t *testing.T, s job.Spec) {
				r := s.Replicas[0]
				require.Equal(t, map[string]string{"pool": "gpu"}, r.NodeSelector)
				require.Equal(t, []job.Toleration{{Key: "spot", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: new(int64(30))}}, r.Tolerations)
				require.Equal(t, "zone", r.Affinity.Required[0].MatchExpressions[0].Key)
			}},
		"node affinity by field": {manifest: worker("", "",
			"affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]}}}", ""),
			issues: []string{"unsupported " + pAt + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields"}},

		// Identity and what the cluster set.
		"default ServiceAccount": {manifest: worker("", "", "serviceAccountName: default", ""), issues: []string{"note " + pAt + ".serviceAccountName"}},
		"token mounted": {manifest: worker("", "", "automountServiceAccountToken: true", ""),
			check:  func(t *testing.T, s job.Spec) { require.True(t, s.Replicas[0].MountServiceAccountToken) },
			issues: []string{"note " + pAt + ".automountServiceAccountToken"}},
		"exported from a cluster": {
			manifest: strings.Replace(worker("", "", "", ""), "  name: t\n", "  name: t\n  uid: 5f1c\n  resourceVersion: '42'\n  creationTimestamp: '2024-01-01T00:00:00Z'\n  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}'}\n  finalizers: [x]\n", 1) +
				"status:\n  conditions: [{type: Succeeded, status: 'True'}]\n",
			issues: []string{"note metadata.annotations", "note metadata.finalizers", "note status"}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Convert([]byte(tc.manifest), testOpts)
			require.NoError(t, err, tc.manifest)
			require.Equal(t, tc.issues, fields(r.Issues), "issues: %v", r.Issues)
			if tc.check != nil {
				tc.check(t, r.Job.Spec)
			}
		})
	}
}

func TestConvertGracePeriodIsTheLongest(t *testing.T) {
	m := "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n" +
		"    Chief: {template: {spec: {terminationGracePeriodSeconds: 30, containers: [{name: tensorflow, image: c}]}}}\n" +
		"    Worker: {template: {spec: {terminationGracePeriodSeconds: 120, containers: [{name: tensorflow, image: w}]}}}\n"
	r, err := Convert([]byte(m), testOpts)
	require.NoError(t, err)
	require.Equal(t, int64(120), *r.Job.Spec.TerminationGracePeriodSeconds)
	require.Equal(t, []string{"note spec.tfReplicaSpecs.Worker.template.spec.terminationGracePeriodSeconds"}, fields(r.Issues))
}

func TestConvertCheckpointMountedInEveryReplica(t *testing.T) {
	m := "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n" +
		"    Chief: {template: {spec: {volumes: [{name: c, persistentVolumeClaim: {claimName: ckpt}}], containers: [{name: tensorflow, image: c, volumeMounts: [{name: c, mountPath: /c}]}]}}}\n" +
		"    Worker: {template: {spec: {volumes: [{name: c, persistentVolumeClaim: {claimName: ckpt}}], containers: [{name: tensorflow, image: w, volumeMounts: [{name: c, mountPath: /elsewhere}]}]}}}\n" +
		"    PS: {template: {spec: {containers: [{name: tensorflow, image: p}]}}}\n"
	r, err := Convert([]byte(m), testOpts)
	require.NoError(t, err)
	require.Equal(t, &job.CheckpointVolume{ClaimName: "ckpt", MountPath: "/c"}, r.Job.Spec.Checkpoint)
	require.Equal(t, []string{
		"unsupported spec.tfReplicaSpecs.Worker.template.spec.containers[0].volumeMounts[0].mountPath",
		"note spec.tfReplicaSpecs.Worker.template.spec.containers",
		"note spec.tfReplicaSpecs.PS.template.spec.containers",
	}, fields(r.Issues))
}
