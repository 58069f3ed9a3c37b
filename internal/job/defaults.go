package job

// Default fills in what the user left unset, as the API documents it:
//
//   - replica count 1, port DefaultPort (2222), restart policy Never;
//   - a TCP probe without a port probes the replica's port;
//   - toleration operator Equal (Kubernetes' own default, made explicit);
//   - clean pod policy Running, success policy ChiefOrWorker0;
//   - checkpoint mount path DefaultCheckpointMount (/checkpoints);
//   - TensorBoard image DefaultTensorBoardImage.
//
// RunPolicy.BackoffLimit is left alone: 0 is a real choice (no restarts),
// so the API layer turns an unset proto field into DefaultBackoffLimit
// before it gets here. Values that are set but wrong (a negative count, an
// unknown policy) are left for Validate to report.
//
// Default is idempotent and never allocates replacements for slices the
// caller shares: it edits the spec's own elements in place.
func (s *Spec) Default() {
	for i := range s.Replicas {
		r := &s.Replicas[i]
		if r.Count == 0 {
			r.Count = 1
		}
		if r.Port == 0 {
			r.Port = DefaultPort
		}
		if r.RestartPolicy == "" {
			r.RestartPolicy = RestartNever
		}
		r.defaultProbes()
		for j := range r.Tolerations {
			if r.Tolerations[j].Operator == "" {
				r.Tolerations[j].Operator = TolerationEqual
			}
		}
	}
	if s.RunPolicy.CleanPodPolicy == "" {
		s.RunPolicy.CleanPodPolicy = CleanRunning
	}
	if s.SuccessPolicy == "" {
		s.SuccessPolicy = SuccessChiefOrWorker0
	}
	if s.Checkpoint != nil && s.Checkpoint.MountPath == "" {
		s.Checkpoint.MountPath = DefaultCheckpointMount
	}
	if s.TensorBoard != nil && s.TensorBoard.Image == "" {
		s.TensorBoard.Image = DefaultTensorBoardImage
	}
}
