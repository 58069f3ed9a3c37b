package job

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// valJob is a job that passes Validate and uses most of the spec, so each
// test case breaks exactly one rule. Replica 1 is the worker.
func valJob() *Job {
	j := &Job{
		Name:        "mnist",
		DisplayName: "MNIST, run 7",
		Labels:      map[string]string{"team": "nlp", "example.com/cost-center": "42"},
		Spec: Spec{
			Replicas: []ReplicaSpec{
				{Type: Chief, Image: "tensorflow/tensorflow:2.16.1", Resources: Resources{CPU: "1", Memory: "2Gi"}},
				{
					Type: Worker, Count: 2,
					Image:   "registry.example.com:5000/ml/trainer:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
					Command: []string{"python", "train.py"},
					Args:    []string{"--epochs=3"},
					Env: []EnvVar{
						{Name: "EPOCHS", Value: "3"},
						{Name: "HF_TOKEN", Secret: &SecretKeyRef{Secret: "hf", Key: "token"}},
						{Name: "my.relaxed-name"},
					},
					Resources:    Resources{CPU: "2", Memory: "4Gi", GPU: 1, CPULimit: "4", MemoryLimit: "8Gi"},
					NodeSelector: map[string]string{"cloud.google.com/gke-spot": "true"},
					Tolerations: []Toleration{
						{Key: "spot", Operator: TolerationExists, Effect: EffectNoSchedule},
						{Key: "gpu", Value: "a100", Effect: EffectNoExecute, TolerationSeconds: valPtr[int64](300)},
						{Operator: TolerationExists},
					},
					Affinity: &Affinity{
						Required: []NodeSelectorTerm{{MatchExpressions: []NodeSelectorRequirement{
							{Key: "zone", Operator: OpIn, Values: []string{"a", "b"}},
							{Key: "gpu-mem", Operator: OpGt, Values: []string{"40"}},
						}}},
						Preferred: []PreferredTerm{{Weight: 100, Preference: NodeSelectorTerm{MatchExpressions: []NodeSelectorRequirement{
							{Key: "spot", Operator: OpExists},
						}}}},
					},
					PodLabels:          map[string]string{"app": "mnist", "sim.trainyard.dev/profile": "fast"},
					PodAnnotations:     map[string]string{"sim.trainyard.dev/exit-code": "137", "example.com/note": "any text at all"},
					RestartPolicy:      RestartExitCode,
					RetryableExitCodes: []int32{137, 143},
					SecretVolumes:      []SecretVolume{{Secret: "gcs", MountPath: "/secrets/gcs"}, {Secret: "hf", MountPath: "/secrets/hf"}},
				},
				{Type: PS, Image: "tensorflow/tensorflow:2.16.1", Port: 3333},
			},
			RunPolicy: RunPolicy{
				BackoffLimit:            DefaultBackoffLimit,
				ActiveDeadlineSeconds:   valPtr[int64](3600),
				TTLSecondsAfterFinished: valPtr[int32](0),
			},
			Checkpoint:  &CheckpointVolume{ClaimName: "mnist-ckpt"},
			TensorBoard: &TensorBoard{LogDir: "logs/train"},
			Priority:    10,
		},
	}
	j.Spec.Default()
	return j
}

func valPtr[T any](v T) *T { return &v }

func valWorker(j *Job) *ReplicaSpec { return &j.Spec.Replicas[1] }

func valLabels(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func TestValidateValid(t *testing.T) {
	require.Empty(t, Validate(valJob()))

	minimal := &Job{Name: "m", Spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Image: "busybox"}}, RunPolicy: RunPolicy{BackoffLimit: 0}}}
	minimal.Spec.Default()
	require.Empty(t, Validate(minimal))
}

func TestValidate(t *testing.T) {
	const p1 = "spec.replicas[1]"
	for name, tc := range map[string]struct {
		mutate func(j *Job)
		want   []string // fields, in order
	}{
		// Job id and derived names.
		"job id required":          {func(j *Job) { j.Name = "" }, []string{"jobId"}},
		"job id not DNS-1035":      {func(j *Job) { j.Name = "7up" }, []string{"jobId"}},
		"job id uppercase":         {func(j *Job) { j.Name = "MNIST" }, []string{"jobId"}},
		"job id over 63":           {func(j *Job) { j.Name = strings.Repeat("a", 64) }, []string{"jobId"}},
		"pod name over 63":         {func(j *Job) { j.Spec.TensorBoard = nil; j.Name = strings.Repeat("a", 55) }, []string{"jobId"}},
		"tensorboard name over 63": {func(j *Job) { j.Name = strings.Repeat("a", 52) }, []string{"jobId"}},
		"pod name of 63 fits":      {func(j *Job) { j.Spec.TensorBoard = nil; j.Name = strings.Repeat("a", 54) }, nil},
		// Job "mnist"'s TensorBoard is mnist-tensorboard (ReservedJobID).
		"job id ending in -tensorboard":      {func(j *Job) { j.Name = "mnist-tensorboard" }, []string{"jobId"}},
		"-tensorboard without TensorBoard":   {func(j *Job) { j.Spec.TensorBoard = nil; j.Name = "mnist-tensorboard" }, []string{"jobId"}},
		"tensorboard elsewhere in the id":    {func(j *Job) { j.Name = "tensorboard-mnist" }, nil},
		"job id ending in tensorboard, no -": {func(j *Job) { j.Name = "mnisttensorboard" }, nil},

		// Display name and labels.
		"display name of 200 characters": {func(j *Job) { j.DisplayName = strings.Repeat("é", 200) }, nil},
		"display name over 200":          {func(j *Job) { j.DisplayName = strings.Repeat("é", 201) }, []string{"displayName"}},
		"too many labels":                {func(j *Job) { j.Labels = valLabels(MaxLabels + 1) }, []string{"labels"}},
		"label key invalid":              {func(j *Job) { j.Labels["bad key"] = "v" }, []string{"labels"}},
		"label value invalid":            {func(j *Job) { j.Labels["team"] = "n l p" }, []string{"labels"}},
		"label value over 63":            {func(j *Job) { j.Labels["team"] = strings.Repeat("x", 64) }, []string{"labels"}},

		// Replica list.
		"no replicas":      {func(j *Job) { j.Spec.Replicas = nil }, []string{"spec.replicas"}},
		"type unspecified": {func(j *Job) { j.Spec.Replicas[2].Type = "" }, []string{"spec.replicas[2].type"}},
		"type unknown":     {func(j *Job) { j.Spec.Replicas[2].Type = "master" }, []string{"spec.replicas[2].type"}},
		"type given twice": {func(j *Job) { j.Spec.Replicas[2].Type = Worker }, []string{"spec.replicas[2].type"}},
		"count 0":          {func(j *Job) { valWorker(j).Count = 0 }, []string{p1 + ".count"}},
		"count over 1024":  {func(j *Job) { valWorker(j).Count = MaxReplicaCount + 1 }, []string{p1 + ".count"}},
		"count 1024":       {func(j *Job) { j.Spec.TensorBoard = nil; valWorker(j).Count = MaxReplicaCount }, nil},
		"total over 2048":  {func(j *Job) { valWorker(j).Count = 1024; j.Spec.Replicas[2].Count = 1024 }, []string{"spec.replicas"}},
		"two chiefs":       {func(j *Job) { j.Spec.Replicas[0].Count = 2 }, []string{"spec.replicas[0].count"}},
		"two evaluators": {func(j *Job) {
			j.Spec.Replicas = append(j.Spec.Replicas, ReplicaSpec{Type: Evaluator, Count: 2, Image: "tf", Port: 1, RestartPolicy: RestartNever})
		}, []string{"spec.replicas[3].count"}},
		"no chief or worker":   {func(j *Job) { j.Spec.Replicas = j.Spec.Replicas[2:] }, []string{"spec.replicas"}},
		"worker without chief": {func(j *Job) { j.Spec.Replicas = j.Spec.Replicas[1:] }, nil},
		"chief without worker": {func(j *Job) { j.Spec.Replicas = j.Spec.Replicas[:1] }, nil},

		// Image.
		"image required":         {func(j *Job) { valWorker(j).Image = "" }, []string{p1 + ".image"}},
		"image over 512":         {func(j *Job) { valWorker(j).Image = "r/" + strings.Repeat("a", 511) }, []string{p1 + ".image"}},
		"image with whitespace":  {func(j *Job) { valWorker(j).Image = "tensorflow/tensorflow :2" }, []string{p1 + ".image"}},
		"image uppercase path":   {func(j *Job) { valWorker(j).Image = "tensorflow/TensorFlow:2" }, []string{p1 + ".image"}},
		"image bad tag":          {func(j *Job) { valWorker(j).Image = "tensorflow:-2" }, []string{p1 + ".image"}},
		"image bad digest":       {func(j *Job) { valWorker(j).Image = "tensorflow@sha256:xyz" }, []string{p1 + ".image"}},
		"image with scheme":      {func(j *Job) { valWorker(j).Image = "https://example.com/tf" }, []string{p1 + ".image"}},
		"command too many items": {func(j *Job) { valWorker(j).Command = make([]string, MaxArgs+1) }, []string{p1 + ".command"}},
		"args over 64 KiB":       {func(j *Job) { valWorker(j).Args = []string{strings.Repeat("a", 32<<10), strings.Repeat("b", 32<<10+1)} }, []string{p1 + ".args"}},

		// Env.
		"env too many": {func(j *Job) {
			valWorker(j).Env = nil
			for i := range MaxEnv + 1 {
				valWorker(j).Env = append(valWorker(j).Env, EnvVar{Name: fmt.Sprintf("V%d", i)})
			}
		}, []string{p1 + ".env"}},
		"env name required":          {func(j *Job) { valWorker(j).Env[0].Name = "" }, []string{p1 + ".env[0].name"}},
		"env name invalid":           {func(j *Job) { valWorker(j).Env[0].Name = "1EPOCHS" }, []string{p1 + ".env[0].name"}},
		"env name with =":            {func(j *Job) { valWorker(j).Env[0].Name = "A=B" }, []string{p1 + ".env[0].name"}},
		"env TF_CONFIG reserved":     {func(j *Job) { valWorker(j).Env[0].Name = "TF_CONFIG" }, []string{p1 + ".env[0].name"}},
		"env TRAINYARD_ reserved":    {func(j *Job) { valWorker(j).Env[0].Name = "TRAINYARD_JOB" }, []string{p1 + ".env[0].name"}},
		"env name duplicate":         {func(j *Job) { valWorker(j).Env[2].Name = "EPOCHS" }, []string{p1 + ".env[2].name"}},
		"env value and secret":       {func(j *Job) { valWorker(j).Env[1].Value = "x" }, []string{p1 + ".env[1]"}},
		"env secret id invalid":      {func(j *Job) { valWorker(j).Env[1].Secret.Secret = "HF_Token" }, []string{p1 + ".env[1].secret.secret"}},
		"env secret id required":     {func(j *Job) { valWorker(j).Env[1].Secret.Secret = "" }, []string{p1 + ".env[1].secret.secret"}},
		"env secret key invalid":     {func(j *Job) { valWorker(j).Env[1].Secret.Key = "a/b" }, []string{p1 + ".env[1].secret.key"}},
		"env secret key required":    {func(j *Job) { valWorker(j).Env[1].Secret.Key = "" }, []string{p1 + ".env[1].secret.key"}},
		"env over 64 KiB":            {func(j *Job) { valWorker(j).Env[0].Value = strings.Repeat("x", MaxEnvBytes) }, []string{p1 + ".env"}},
		"env empty value is a value": {func(j *Job) { valWorker(j).Env[0].Value = "" }, nil},

		// Resources.
		"cpu not a quantity":      {func(j *Job) { valWorker(j).Resources.CPU = "two" }, []string{p1 + ".resources.cpu"}},
		"cpu negative":            {func(j *Job) { valWorker(j).Resources.CPU = "-1" }, []string{p1 + ".resources.cpu"}},
		"memory zero":             {func(j *Job) { valWorker(j).Resources.Memory = "0" }, []string{p1 + ".resources.memory"}},
		"cpu limit not quantity":  {func(j *Job) { valWorker(j).Resources.CPULimit = "4 cores" }, []string{p1 + ".resources.cpuLimit"}},
		"memory limit zero":       {func(j *Job) { valWorker(j).Resources.MemoryLimit = "0Gi" }, []string{p1 + ".resources.memoryLimit"}},
		"cpu limit below request": {func(j *Job) { valWorker(j).Resources.CPULimit = "1500m" }, []string{p1 + ".resources.cpuLimit"}},
		"memory limit below":      {func(j *Job) { valWorker(j).Resources.MemoryLimit = "4000Mi" }, []string{p1 + ".resources.memoryLimit"}},
		"limit equal to request":  {func(j *Job) { valWorker(j).Resources.CPULimit = "2000m"; valWorker(j).Resources.MemoryLimit = "4Gi" }, nil},
		"gpu negative":            {func(j *Job) { valWorker(j).Resources.GPU = -1 }, []string{p1 + ".resources.gpu"}},
		"gpu over 64":             {func(j *Job) { valWorker(j).Resources.GPU = MaxGPU + 1 }, []string{p1 + ".resources.gpu"}},
		"requests overflow": {func(j *Job) {
			valWorker(j).Resources.Memory = "8E"
			valWorker(j).Resources.MemoryLimit = ""
		}, []string{"spec.replicas"}},

		// Node selector.
		"node selector too many":  {func(j *Job) { valWorker(j).NodeSelector = valLabels(MaxNodeSelector + 1) }, []string{p1 + ".nodeSelector"}},
		"node selector bad key":   {func(j *Job) { valWorker(j).NodeSelector["/spot"] = "true" }, []string{p1 + ".nodeSelector"}},
		"node selector bad value": {func(j *Job) { valWorker(j).NodeSelector["spot"] = "yes!" }, []string{p1 + ".nodeSelector"}},

		// Tolerations.
		"tolerations too many": {func(j *Job) {
			valWorker(j).Tolerations = make([]Toleration, MaxTolerations+1)
			valTolerations(valWorker(j).Tolerations)
		}, []string{p1 + ".tolerations"}},
		"toleration operator unknown":          {func(j *Job) { valWorker(j).Tolerations[0].Operator = "Like" }, []string{p1 + ".tolerations[0].operator"}},
		"toleration Exists with value":         {func(j *Job) { valWorker(j).Tolerations[0].Value = "x" }, []string{p1 + ".tolerations[0].value"}},
		"toleration Equal without key":         {func(j *Job) { valWorker(j).Tolerations[1].Key = "" }, []string{p1 + ".tolerations[1].key"}},
		"toleration bad key":                   {func(j *Job) { valWorker(j).Tolerations[0].Key = "spot instance" }, []string{p1 + ".tolerations[0].key"}},
		"toleration bad value":                 {func(j *Job) { valWorker(j).Tolerations[1].Value = "a 100" }, []string{p1 + ".tolerations[1].value"}},
		"toleration effect unknown":            {func(j *Job) { valWorker(j).Tolerations[0].Effect = "NoRun" }, []string{p1 + ".tolerations[0].effect"}},
		"toleration seconds without NoExecute": {func(j *Job) { valWorker(j).Tolerations[0].TolerationSeconds = valPtr[int64](5) }, []string{p1 + ".tolerations[0].tolerationSeconds"}},
		"toleration seconds negative":          {func(j *Job) { valWorker(j).Tolerations[1].TolerationSeconds = valPtr[int64](-1) }, []string{p1 + ".tolerations[1].tolerationSeconds"}},

		// Affinity.
		"affinity operator unknown":   {func(j *Job) { valReq(j, 0).Operator = "Has" }, []string{p1 + ".affinity.required[0].matchExpressions[0].operator"}},
		"affinity In without values":  {func(j *Job) { valReq(j, 0).Values = nil }, []string{p1 + ".affinity.required[0].matchExpressions[0].values"}},
		"affinity In bad value":       {func(j *Job) { valReq(j, 0).Values[1] = "b c" }, []string{p1 + ".affinity.required[0].matchExpressions[0].values[1]"}},
		"affinity too many values":    {func(j *Job) { valReq(j, 0).Values = make([]string, MaxAffinityValues+1) }, []string{p1 + ".affinity.required[0].matchExpressions[0].values"}},
		"affinity Exists with values": {func(j *Job) { valPref(j, 0).Values = []string{"true"} }, []string{p1 + ".affinity.preferred[0].preference.matchExpressions[0].values"}},
		"affinity Gt two values":      {func(j *Job) { valReq(j, 1).Values = []string{"1", "2"} }, []string{p1 + ".affinity.required[0].matchExpressions[1].values"}},
		"affinity Lt not integer":     {func(j *Job) { valReq(j, 1).Operator = OpLt; valReq(j, 1).Values = []string{"40G"} }, []string{p1 + ".affinity.required[0].matchExpressions[1].values[0]"}},
		"affinity key invalid":        {func(j *Job) { valReq(j, 0).Key = "-zone" }, []string{p1 + ".affinity.required[0].matchExpressions[0].key"}},
		"affinity key required":       {func(j *Job) { valReq(j, 0).Key = "" }, []string{p1 + ".affinity.required[0].matchExpressions[0].key"}},
		"affinity empty term": {func(j *Job) {
			valWorker(j).Affinity.Required = append(valWorker(j).Affinity.Required, NodeSelectorTerm{})
		}, []string{p1 + ".affinity.required[1].matchExpressions"}},
		"affinity too many expressions": {func(j *Job) {
			t := &valWorker(j).Affinity.Required[0]
			for len(t.MatchExpressions) <= MaxMatchExpressions {
				t.MatchExpressions = append(t.MatchExpressions, NodeSelectorRequirement{Key: "k", Operator: OpExists})
			}
		}, []string{p1 + ".affinity.required[0].matchExpressions"}},
		"affinity too many required terms": {func(j *Job) {
			a := valWorker(j).Affinity
			for len(a.Required) <= MaxAffinityTerms {
				a.Required = append(a.Required, a.Required[0])
			}
		}, []string{p1 + ".affinity.required"}},
		"affinity too many preferred terms": {func(j *Job) {
			a := valWorker(j).Affinity
			for len(a.Preferred) <= MaxAffinityTerms {
				a.Preferred = append(a.Preferred, a.Preferred[0])
			}
		}, []string{p1 + ".affinity.preferred"}},
		"affinity weight 0":   {func(j *Job) { valWorker(j).Affinity.Preferred[0].Weight = 0 }, []string{p1 + ".affinity.preferred[0].weight"}},
		"affinity weight 101": {func(j *Job) { valWorker(j).Affinity.Preferred[0].Weight = 101 }, []string{p1 + ".affinity.preferred[0].weight"}},

		// Pod labels and annotations.
		"pod labels too many":              {func(j *Job) { valWorker(j).PodLabels = valLabels(MaxLabels + 1) }, []string{p1 + ".podLabels"}},
		"pod label bad value":              {func(j *Job) { valWorker(j).PodLabels["app"] = "-mnist" }, []string{p1 + ".podLabels"}},
		"pod label bad key":                {func(j *Job) { valWorker(j).PodLabels["a/b/c"] = "x" }, []string{p1 + ".podLabels"}},
		"pod label trainyard.dev reserved": {func(j *Job) { valWorker(j).PodLabels["trainyard.dev/job"] = "other" }, []string{p1 + ".podLabels"}},
		"pod label subdomain reserved":     {func(j *Job) { valWorker(j).PodLabels["x.trainyard.dev/job"] = "other" }, []string{p1 + ".podLabels"}},
		"pod label managed-by reserved":    {func(j *Job) { valWorker(j).PodLabels[LabelManagedBy] = "me" }, []string{p1 + ".podLabels"}},
		"pod annotation reserved":          {func(j *Job) { valWorker(j).PodAnnotations["trainyard.dev/attempt"] = "0" }, []string{p1 + ".podAnnotations"}},
		"pod annotation bad key":           {func(j *Job) { valWorker(j).PodAnnotations["not a key"] = "x" }, []string{p1 + ".podAnnotations"}},
		"pod annotations over 64 KiB":      {func(j *Job) { valWorker(j).PodAnnotations["big"] = strings.Repeat("x", MaxPodAnnotationBytes) }, []string{p1 + ".podAnnotations"}},
		"lookalike domain is not reserved": {func(j *Job) { valWorker(j).PodLabels["nottrainyard.dev/x"] = "y" }, nil},

		// Port, restart policy, exit codes.
		"port 0":                             {func(j *Job) { valWorker(j).Port = 0 }, []string{p1 + ".port"}},
		"port 65536":                         {func(j *Job) { valWorker(j).Port = 65536 }, []string{p1 + ".port"}},
		"restart policy unset":               {func(j *Job) { valWorker(j).RestartPolicy = ""; valWorker(j).RetryableExitCodes = nil }, []string{p1 + ".restartPolicy"}},
		"restart policy unknown":             {func(j *Job) { j.Spec.Replicas[0].RestartPolicy = "Sometimes" }, []string{"spec.replicas[0].restartPolicy"}},
		"exit codes without ExitCode policy": {func(j *Job) { valWorker(j).RestartPolicy = RestartOnFailure }, []string{p1 + ".retryableExitCodes"}},
		"exit code 0":                        {func(j *Job) { valWorker(j).RetryableExitCodes[0] = 0 }, []string{p1 + ".retryableExitCodes[0]"}},
		"exit code 256":                      {func(j *Job) { valWorker(j).RetryableExitCodes[1] = 256 }, []string{p1 + ".retryableExitCodes[1]"}},
		"exit code twice":                    {func(j *Job) { valWorker(j).RetryableExitCodes[1] = 137 }, []string{p1 + ".retryableExitCodes[1]"}},
		"a million exit codes":               {func(j *Job) { valWorker(j).RetryableExitCodes = make([]int32, 1e6) }, []string{p1 + ".retryableExitCodes"}},

		// Secret volumes.
		"secret volumes too many": {func(j *Job) {
			valWorker(j).SecretVolumes = nil
			for i := range MaxSecretVolumes + 1 {
				valWorker(j).SecretVolumes = append(valWorker(j).SecretVolumes, SecretVolume{Secret: "s", MountPath: fmt.Sprintf("/s/%d", i)})
			}
		}, []string{p1 + ".secretVolumes"}},
		"secret volume id invalid":          {func(j *Job) { valWorker(j).SecretVolumes[0].Secret = "gcs.key" }, []string{p1 + ".secretVolumes[0].secret"}},
		"secret volume path required":       {func(j *Job) { valWorker(j).SecretVolumes[0].MountPath = "" }, []string{p1 + ".secretVolumes[0].mountPath"}},
		"secret volume path relative":       {func(j *Job) { valWorker(j).SecretVolumes[0].MountPath = "secrets/gcs" }, []string{p1 + ".secretVolumes[0].mountPath"}},
		"secret volume path not clean":      {func(j *Job) { valWorker(j).SecretVolumes[0].MountPath = "/secrets/../etc" }, []string{p1 + ".secretVolumes[0].mountPath"}},
		"secret volume path trailing slash": {func(j *Job) { valWorker(j).SecretVolumes[0].MountPath = "/secrets/gcs/" }, []string{p1 + ".secretVolumes[0].mountPath"}},
		"secret volume path root":           {func(j *Job) { valWorker(j).SecretVolumes[0].MountPath = "/" }, []string{p1 + ".secretVolumes[0].mountPath"}},
		"secret volume path twice":          {func(j *Job) { valWorker(j).SecretVolumes[1].MountPath = "/secrets/gcs" }, []string{p1 + ".secretVolumes[1].mountPath"}},
		"secret volume on checkpoint":       {func(j *Job) { valWorker(j).SecretVolumes[1].MountPath = "/checkpoints" }, []string{p1 + ".secretVolumes[1].mountPath"}},
		"secret volume inside checkpoint":   {func(j *Job) { valWorker(j).SecretVolumes[1].MountPath = "/checkpoints/keys" }, []string{p1 + ".secretVolumes[1].mountPath"}},
		"checkpoint inside secret volume":   {func(j *Job) { j.Spec.Checkpoint.MountPath = "/secrets/hf/ckpt" }, []string{p1 + ".secretVolumes[1].mountPath"}},
		"secret volume beside checkpoint":   {func(j *Job) { valWorker(j).SecretVolumes[1].MountPath = "/checkpoints2" }, nil},

		// Run policy.
		"backoff limit negative":    {func(j *Job) { j.Spec.RunPolicy.BackoffLimit = -1 }, []string{"spec.runPolicy.backoffLimit"}},
		"backoff limit over 100":    {func(j *Job) { j.Spec.RunPolicy.BackoffLimit = 101 }, []string{"spec.runPolicy.backoffLimit"}},
		"deadline 0":                {func(j *Job) { j.Spec.RunPolicy.ActiveDeadlineSeconds = valPtr[int64](0) }, []string{"spec.runPolicy.activeDeadlineSeconds"}},
		"deadline over 30 days":     {func(j *Job) { j.Spec.RunPolicy.ActiveDeadlineSeconds = valPtr[int64](MaxActiveDeadlineSeconds + 1) }, []string{"spec.runPolicy.activeDeadlineSeconds"}},
		"deadline unset":            {func(j *Job) { j.Spec.RunPolicy.ActiveDeadlineSeconds = nil }, nil},
		"ttl negative":              {func(j *Job) { j.Spec.RunPolicy.TTLSecondsAfterFinished = valPtr[int32](-1) }, []string{"spec.runPolicy.ttlSecondsAfterFinished"}},
		"clean pod policy unknown":  {func(j *Job) { j.Spec.RunPolicy.CleanPodPolicy = "Some" }, []string{"spec.runPolicy.cleanPodPolicy"}},
		"success policy unknown":    {func(j *Job) { j.Spec.SuccessPolicy = "Chief" }, []string{"spec.successPolicy"}},
		"AllWorkers without worker": {func(j *Job) { j.Spec.SuccessPolicy = SuccessAllWorkers; j.Spec.Replicas = j.Spec.Replicas[:1] }, []string{"spec.successPolicy"}},
		"AllWorkers with workers":   {func(j *Job) { j.Spec.SuccessPolicy = SuccessAllWorkers }, nil},

		// Checkpoint and TensorBoard.
		"checkpoint claim required":      {func(j *Job) { j.Spec.Checkpoint.ClaimName = "" }, []string{"spec.checkpoint.claimName"}},
		"checkpoint claim invalid":       {func(j *Job) { j.Spec.Checkpoint.ClaimName = "Ckpt_1" }, []string{"spec.checkpoint.claimName"}},
		"checkpoint mount relative":      {func(j *Job) { j.Spec.Checkpoint.MountPath = "ckpt" }, []string{"spec.checkpoint.mountPath"}},
		"checkpoint mount not clean":     {func(j *Job) { j.Spec.Checkpoint.MountPath = "/data/./ckpt" }, []string{"spec.checkpoint.mountPath"}},
		"tensorboard without checkpoint": {func(j *Job) { j.Spec.Checkpoint = nil }, []string{"spec.tensorboard"}},
		"tensorboard image invalid":      {func(j *Job) { j.Spec.TensorBoard.Image = "Tensor Board" }, []string{"spec.tensorboard.image"}},
		"tensorboard log dir absolute":   {func(j *Job) { j.Spec.TensorBoard.LogDir = "/logs" }, []string{"spec.tensorboard.logDir"}},
		"tensorboard log dir escapes":    {func(j *Job) { j.Spec.TensorBoard.LogDir = "../other-job" }, []string{"spec.tensorboard.logDir"}},
		"tensorboard log dir not clean":  {func(j *Job) { j.Spec.TensorBoard.LogDir = "logs//train" }, []string{"spec.tensorboard.logDir"}},
		"tensorboard log dir empty":      {func(j *Job) { j.Spec.TensorBoard.LogDir = "" }, nil},
		"checkpoint without tensorboard": {func(j *Job) { j.Spec.TensorBoard = nil }, nil},

		// Priority.
		"priority over 1000":   {func(j *Job) { j.Spec.Priority = 1001 }, []string{"spec.priority"}},
		"priority below -1000": {func(j *Job) { j.Spec.Priority = -1001 }, []string{"spec.priority"}},
		"priority -1000":       {func(j *Job) { j.Spec.Priority = -1000 }, nil},

		// Clusters.
		"cluster selector and names": {func(j *Job) {
			j.Spec.ClusterSelector = map[string]string{"topology.kubernetes.io/region": "eu-west-1"}
			j.Spec.Clusters = []string{"gpu-east", "a1"}
		}, nil},
		"cluster selector key invalid":   {func(j *Job) { j.Spec.ClusterSelector = map[string]string{"bad key": "x"} }, []string{"spec.clusterSelector"}},
		"cluster selector value invalid": {func(j *Job) { j.Spec.ClusterSelector = map[string]string{"region": "eu west"} }, []string{"spec.clusterSelector"}},
		"cluster selector over 16":       {func(j *Job) { j.Spec.ClusterSelector = valLabels(MaxClusterSelector + 1) }, []string{"spec.clusterSelector"}},
		"cluster id invalid": {func(j *Job) { j.Spec.Clusters = []string{"ok", "Gpu_East", "", "-x"} }, []string{
			"spec.clusters[1]", "spec.clusters[2]", "spec.clusters[3]",
		}},
		"cluster id twice": {func(j *Job) { j.Spec.Clusters = []string{"a", "b", "a"} }, []string{"spec.clusters[2]"}},
		"clusters over 64": {func(j *Job) {
			for i := range MaxClusters + 1 {
				j.Spec.Clusters = append(j.Spec.Clusters, fmt.Sprintf("c%d", i))
			}
		}, []string{"spec.clusters"}},

		// Several problems at once: every one is reported, in order.
		"all problems reported": {func(j *Job) {
			j.Name = "Bad"
			j.Spec.Replicas[0].Image = ""
			valWorker(j).Resources.GPU = 100
			valWorker(j).Port = 0
			j.Spec.Priority = 5000
		}, []string{"jobId", "spec.replicas[0].image", p1 + ".resources.gpu", p1 + ".port", "spec.priority"}},
	} {
		t.Run(name, func(t *testing.T) {
			j := valJob()
			tc.mutate(j)
			got := Validate(j)
			var fields []string
			for _, v := range got {
				fields = append(fields, v.Field)
				require.NotEmpty(t, v.Description, v.Field)
			}
			require.Empty(t, cmp.Diff(tc.want, fields), "violations: %+v", got)
		})
	}
}

func valReq(j *Job, i int) *NodeSelectorRequirement {
	return &valWorker(j).Affinity.Required[0].MatchExpressions[i]
}

func valPref(j *Job, i int) *NodeSelectorRequirement {
	return &valWorker(j).Affinity.Preferred[0].Preference.MatchExpressions[i]
}

func valTolerations(ts []Toleration) {
	for i := range ts {
		ts[i] = Toleration{Key: fmt.Sprintf("t%d", i), Operator: TolerationExists}
	}
}

func TestValidateDescriptions(t *testing.T) {
	j := valJob()
	j.Spec.Replicas[0].Count = 2
	j.Spec.Replicas[2].Type = Worker
	valWorker(j).PodLabels["trainyard.dev/job"] = "x"
	got := Validate(j)
	want := []FieldViolation{
		{Field: "spec.replicas[0].count", Description: "a job has at most 1 CHIEF replica, not 2"},
		{Field: "spec.replicas[2].type", Description: "WORKER is already given in spec.replicas[1]; give each type once, with a count"},
		{Field: "spec.replicas[1].podLabels", Description: `key "trainyard.dev/job" is reserved for Trainyard`},
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestImageReferences(t *testing.T) {
	for _, image := range []string{
		"busybox",
		"tensorflow/tensorflow",
		"tensorflow/tensorflow:2.16.1-gpu",
		"nvcr.io/nvidia/tensorflow:24.01-tf2-py3",
		"localhost:5000/trainer",
		"localhost/trainer:latest",
		"registry.example.com:443/team/sub_team/trainer__x:v1.2",
		"ghcr.io/org/img-name@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"img:tag@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"Registry.Example.com/team/trainer",
	} {
		t.Run(image, func(t *testing.T) {
			var v Violations
			v.image("image", image)
			require.Empty(t, v)
		})
	}
	for _, image := range []string{
		"UPPER",
		"team/Trainer",
		"img:",
		"img@",
		"img:tag:tag",
		"/img",
		"img/",
		"img//x",
		"img..x",
		"img:" + strings.Repeat("t", 129),
		"img@sha256:0123",
		"img@md5!:0123456789abcdef0123456789abcdef",
	} {
		t.Run(image, func(t *testing.T) {
			var v Violations
			v.image("image", image)
			require.Len(t, v, 1)
		})
	}
}
