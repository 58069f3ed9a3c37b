package api

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/webhook"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeWebhooks keeps webhooks in a map.
type fakeWebhooks struct {
	WebhookStore
	hooks map[string]webhook.Webhook
}

func (f *fakeWebhooks) WebhookGet(_ context.Context, t, id string) (webhook.Webhook, error) {
	w, ok := f.hooks[t+"/"+id]
	if !ok {
		return w, store.ErrNotFound
	}
	return w, nil
}

func (f *fakeWebhooks) WebhookCreate(_ context.Context, w webhook.Webhook) (webhook.Webhook, error) {
	f.hooks[w.Tenant+"/"+w.ID] = w
	return w, nil
}

func TestCreateWebhook(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "team-a", State: tenant.Active}
	k := &fakeKube{secrets: map[string]bool{}}
	hooks := &fakeWebhooks{hooks: map[string]webhook.Webhook{}}
	srv := NewWebhookServer(Deps{Store: st, Kube: k}, hooks, webhook.Policy{})
	secret := webhook.NewSecret()
	create := func(id, url, secret string, types ...pb.WebhookEventType) (*pb.Webhook, error) {
		return srv.CreateWebhook(context.Background(), &pb.CreateWebhookRequest{Parent: "tenants/a", WebhookId: id,
			Webhook: &pb.Webhook{Url: url, EventTypes: types, SigningSecret: secret, LabelSelector: map[string]string{"pipeline": "publish"}}})
	}

	w, err := create("registry", "https://93.184.216.34/hooks", secret, pb.WebhookEventType_WEBHOOK_EVENT_TYPE_JOB_SUCCEEDED,
		pb.WebhookEventType_WEBHOOK_EVENT_TYPE_TENANT_QUOTA_CHANGED)
	require.NoError(t, err)
	require.Equal(t, "tenants/a/webhooks/registry", w.GetName())
	require.Empty(t, w.GetSigningSecret())
	require.Equal(t, []string{"job.succeeded", "tenant.quota_changed"}, hooks.hooks["a/registry"].EventTypes)
	require.True(t, k.secrets["team-a/trainyard-webhook-registry"], "the secret went to Kubernetes")

	_, err = create("registry", "https://93.184.216.34/hooks", secret, pb.WebhookEventType_WEBHOOK_EVENT_TYPE_JOB_SUCCEEDED)
	require.Equal(t, codes.AlreadyExists, status.Code(err))

	// Every problem at once, each naming its field; the secret never echoed.
	bad := "whsec_" + strings.Repeat("A", 8)
	_, err = create("Bad_Id", "http://10.0.0.7/hook", bad)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	fields := map[string]bool{}
	for _, v := range badRequest(t, err).GetFieldViolations() {
		fields[v.GetField()] = true
		require.NotContains(t, v.GetDescription(), bad)
	}
	require.Equal(t, map[string]bool{"webhookId": true, "webhook.eventTypes": true, "webhook.signingSecret": true, "webhook.url": true}, fields)
	_, err = create("loop", "http://127.0.0.1:9/", secret, pb.WebhookEventType_WEBHOOK_EVENT_TYPE_JOB_FAILED)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "loopback is closed by default")
}
