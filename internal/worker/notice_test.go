package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/store"
)

// Admissions wake only the claimers of the cluster the jobs went to; a
// job's payload and a scheduler's that names no cluster wake any.
func TestJobNotice(t *testing.T) {
	for _, c := range []struct {
		payload string
		key     store.JobKey
		want    notice
	}{
		{store.AdmittedPayload("acme", "eu-1"), store.JobKey{}, noticeAdmitted},
		{store.AdmittedPayload("acme", "us-2"), store.JobKey{}, noticeNone},
		{store.AdmittedPayload("acme", "eu-10"), store.JobKey{}, noticeNone},
		{"acme/", store.JobKey{}, noticeAdmitted},
		{"acme/01a24491-d333-797a-afea-90c295a8053d", store.JobKey{Tenant: "acme", UID: "01a24491-d333-797a-afea-90c295a8053d"}, noticeJob},
		{"acme", store.JobKey{}, noticeNone},
		{"/01a24491", store.JobKey{}, noticeNone},
	} {
		key, got := jobNotice(c.payload, "eu-1")
		require.Equal(t, c.want, got, c.payload)
		require.Equal(t, c.key, key, c.payload)
	}
}
