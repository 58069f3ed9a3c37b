package experiment

import (
	"encoding/json"

	"github.com/trainyard/trainyard/internal/job"
)

// cloneSpec deep-copies a job spec through its JSON form (which is what is
// stored anyway), so a trial's expansion never writes into the template.
func cloneSpec(s job.Spec) (job.Spec, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return job.Spec{}, err
	}
	var out job.Spec
	err = json.Unmarshal(b, &out)
	return out, err
}
