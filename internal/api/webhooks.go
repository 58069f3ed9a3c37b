package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/webhook"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// WebhookStore is the part of *store.Store WebhookServer uses.
type WebhookStore interface {
	WebhookCreate(ctx context.Context, w webhook.Webhook) (webhook.Webhook, error)
	WebhookGet(ctx context.Context, tenantID, id string) (webhook.Webhook, error)
	WebhookList(ctx context.Context, tenantID string) ([]webhook.Webhook, error)
	WebhookUpdate(ctx context.Context, tenantID, id string, secretReplaced bool, fn func(*webhook.Webhook) error) (webhook.Webhook, error)
	WebhookDelete(ctx context.Context, tenantID, id string) error
	DeliveryList(ctx context.Context, tenantID, webhookID string, beforeID int64, limit int) ([]webhook.Delivery, error)
	DeliveryGet(ctx context.Context, tenantID, webhookID string, id int64) (webhook.Delivery, error)
	DeliveryRedeliver(ctx context.Context, tenantID, webhookID string, id int64) (webhook.Delivery, error)
	DeliveryPing(ctx context.Context, tenantID, webhookID string) (webhook.Delivery, error)
}

// WebhookServer implements trainyard.v1.WebhookService (tenant admins;
// the interceptor decided). A webhook's signing secret goes to a
// Kubernetes Secret in the tenant's namespace (webhook.SecretName), as a
// tenant secret's values do, before its row is written; it is never
// returned, stored in Postgres or logged.
type WebhookServer struct {
	pb.UnimplementedWebhookServiceServer
	deps
	webhooks WebhookStore
	policy   webhook.Policy
}

// NewWebhookServer returns the WebhookService implementation; policy is
// where webhooks may point (checked when one is created or its URL changes).
func NewWebhookServer(d Deps, ws WebhookStore, policy webhook.Policy) *WebhookServer {
	return &WebhookServer{deps: d.withDefaults(), webhooks: ws, policy: policy}
}

var topicByEventType = func() map[pb.WebhookEventType]string {
	m := map[pb.WebhookEventType]string{}
	for v, name := range pb.WebhookEventType_name {
		if v == 0 {
			continue
		}
		s := strings.ToLower(strings.TrimPrefix(name, "WEBHOOK_EVENT_TYPE_"))
		m[pb.WebhookEventType(v)] = strings.Replace(s, "_", ".", 1)
	}
	return m
}()

var webhookStateToPB = map[webhook.State]pb.WebhookState{
	webhook.Active: pb.WebhookState_WEBHOOK_STATE_ACTIVE, webhook.Disabled: pb.WebhookState_WEBHOOK_STATE_DISABLED,
}

var deliveryStateToPB = map[webhook.DeliveryState]pb.DeliveryState{
	webhook.Pending: pb.DeliveryState_DELIVERY_STATE_PENDING, webhook.Succeeded: pb.DeliveryState_DELIVERY_STATE_SUCCEEDED,
	webhook.Failed: pb.DeliveryState_DELIVERY_STATE_FAILED,
}

func webhookToPB(w webhook.Webhook) *pb.Webhook {
	out := &pb.Webhook{
		Name: resname.Webhook.Format(w.Tenant, w.ID), Url: w.URL, LabelSelector: w.LabelSelector,
		Description: w.Description, State: webhookStateToPB[w.State], StateReason: w.StateReason,
		CreateTime: ts(w.CreateTime), UpdateTime: ts(w.UpdateTime),
	}
	byTopic := invert(topicByEventType)
	for _, t := range w.EventTypes {
		out.EventTypes = append(out.EventTypes, byTopic[t])
	}
	return out
}

func deliveryToPB(d webhook.Delivery) *pb.WebhookDelivery {
	return &pb.WebhookDelivery{
		Name:      resname.WebhookDelivery.Format(d.Tenant, d.Webhook, strconv.FormatInt(d.ID, 10)),
		MessageId: d.MessageID, Type: webhook.CloudEventType(d.Topic), Subject: d.Subject, EventTime: ts(d.EventTime),
		State: deliveryStateToPB[d.State], Attempts: d.Attempts, NextAttemptTime: ts(d.NextAttemptTime),
		LastAttemptTime: tsp(d.LastAttemptTime), LastStatusCode: d.LastStatusCode, LastError: d.LastError,
		LastLatency: durationpb.New(d.LastLatency), CreateTime: ts(d.CreateTime),
	}
}

// webhookFields copies the fields named in fields from in to w, collecting
// what is wrong with the event types.
func webhookFieldsFromPB(in *pb.Webhook, w *webhook.Webhook, fields map[string]bool, vs *job.Violations) {
	if fields["url"] {
		w.URL = in.GetUrl()
	}
	if fields["event_types"] {
		w.EventTypes = nil
		for i, t := range in.GetEventTypes() {
			topic, ok := topicByEventType[t]
			if !ok {
				vs.Add(fmt.Sprintf("webhook.eventTypes[%d]", i), "must be one of the WEBHOOK_EVENT_TYPE_ values, not %s", t)
				continue
			}
			w.EventTypes = append(w.EventTypes, topic)
		}
	}
	if fields["label_selector"] {
		w.LabelSelector = in.GetLabelSelector()
	}
	if fields["description"] {
		w.Description = in.GetDescription()
	}
	if fields["state"] {
		switch in.GetState() {
		case pb.WebhookState_WEBHOOK_STATE_ACTIVE:
			w.State = webhook.Active
		case pb.WebhookState_WEBHOOK_STATE_DISABLED:
			w.State = webhook.Disabled
			if w.StateReason == "" {
				w.StateReason = "disabled by an admin"
			}
		default:
			vs.Add("webhook.state", "must be WEBHOOK_STATE_ACTIVE or WEBHOOK_STATE_DISABLED")
		}
	}
}

var webhookUpdatable = []string{"url", "event_types", "label_selector", "description", "state", "signing_secret"}

func (s *WebhookServer) checkURL(ctx context.Context, rawURL string, vs *job.Violations) {
	if _, err := webhook.ParseURL(rawURL); err != nil {
		return // Validate reports it
	}
	if err := s.policy.CheckURL(ctx, rawURL); err != nil {
		vs.Add("webhook.url", "%v", err)
	}
}

// activeTenant returns the tenant when webhooks may be written in it.
func (s *WebhookServer) activeTenant(ctx context.Context, tenantID string) (tenant.Tenant, error) {
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return t, err
	}
	if t.State != tenant.Active {
		return t, status.Errorf(codes.FailedPrecondition, "tenant %q is %s: webhooks can only be written in an active tenant", tenantID, t.State)
	}
	if s.kube == nil {
		return t, status.Error(codes.FailedPrecondition, "this server has no Kubernetes cluster configured to keep webhook signing secrets")
	}
	return t, nil
}

func (s *WebhookServer) putSecret(ctx context.Context, t tenant.Tenant, id, secret string) error {
	name := webhook.SecretName(id)
	if err := s.kube.PutSecret(ctx, t.ID, t.Namespace, name, map[string]string{webhook.SecretKey: secret}); err != nil {
		return (&TenantServer{deps: s.deps}).secretWriteError(ctx, t.ID, t.Namespace, name, err)
	}
	return nil
}

func (s *WebhookServer) CreateWebhook(ctx context.Context, req *pb.CreateWebhookRequest) (*pb.Webhook, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	var vs job.Violations
	if err := webhook.ValidateID(req.GetWebhookId()); err != nil {
		vs.Add("webhookId", "%v", err)
	}
	if req.GetWebhook() == nil {
		vs.Add("webhook", "is required")
		return nil, invalid(vs...)
	}
	w := webhook.Webhook{Tenant: tenantID, ID: req.GetWebhookId(), State: webhook.Active}
	all := map[string]bool{}
	for _, f := range webhookUpdatable {
		all[f] = true
	}
	webhookFieldsFromPB(req.GetWebhook(), &w, all, &vs)
	if req.GetWebhook().GetState() == pb.WebhookState_WEBHOOK_STATE_UNSPECIFIED {
		w.State, w.StateReason = webhook.Active, ""
		vs = slices.DeleteFunc(vs, func(v job.FieldViolation) bool { return v.Field == "webhook.state" })
	}
	vs.AddAt("webhook.", webhook.Validate(w))
	if err := webhook.ValidateSecret(req.GetWebhook().GetSigningSecret()); err != nil {
		vs.Add("webhook.signingSecret", "%v", err)
	}
	s.checkURL(ctx, w.URL, &vs)
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	t, err := s.activeTenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	// The Secret is written first and would replace an existing webhook's.
	if _, err := s.webhooks.WebhookGet(ctx, tenantID, w.ID); err == nil {
		return nil, status.Errorf(codes.AlreadyExists, "webhook %s already exists in tenant %s", quote(w.ID), quote(tenantID))
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err := s.putSecret(ctx, t, w.ID, req.GetWebhook().GetSigningSecret()); err != nil {
		return nil, err
	}
	created, err := s.webhooks.WebhookCreate(ctx, w)
	if err != nil {
		return nil, err
	}
	return webhookToPB(created), nil
}

func parseWebhook(field, name string) (tenantID, id string, err error) {
	ids, err := parse(resname.Webhook, field, name)
	if err != nil {
		return "", "", err
	}
	return ids[0], ids[1], nil
}

func (s *WebhookServer) GetWebhook(ctx context.Context, req *pb.GetWebhookRequest) (*pb.Webhook, error) {
	tenantID, id, err := parseWebhook("name", req.GetName())
	if err != nil {
		return nil, err
	}
	w, err := s.webhooks.WebhookGet(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	return webhookToPB(w), nil
}

func (s *WebhookServer) ListWebhooks(ctx context.Context, req *pb.ListWebhooksRequest) (*pb.ListWebhooksResponse, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	list, err := s.webhooks.WebhookList(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListWebhooksResponse{}
	for _, w := range list {
		resp.Webhooks = append(resp.Webhooks, webhookToPB(w))
	}
	return resp, nil
}

// updateFields is the mask as field names; an empty mask is the fields set in in.
func webhookUpdateFields(in *pb.Webhook, paths []string) (map[string]bool, error) {
	fields := map[string]bool{}
	if len(paths) == 0 {
		fields["url"] = in.GetUrl() != ""
		fields["event_types"] = len(in.GetEventTypes()) > 0
		fields["label_selector"] = len(in.GetLabelSelector()) > 0
		fields["description"] = in.GetDescription() != ""
		fields["state"] = in.GetState() != pb.WebhookState_WEBHOOK_STATE_UNSPECIFIED
		fields["signing_secret"] = in.GetSigningSecret() != ""
		return fields, nil
	}
	for _, p := range paths {
		p = snake(strings.TrimSpace(p))
		switch {
		case p == "*":
			for _, f := range webhookUpdatable {
				fields[f] = true
			}
		case slices.Contains(webhookUpdatable, p):
			fields[p] = true
		case p == "name" || p == "state_reason" || p == "create_time" || p == "update_time":
		default:
			return nil, invalid(violation("updateMask", fmt.Sprintf("%s cannot be updated; updatable: %s or *", quote(p), strings.Join(webhookUpdatable, ", "))))
		}
	}
	return fields, nil
}

func (s *WebhookServer) UpdateWebhook(ctx context.Context, req *pb.UpdateWebhookRequest) (*pb.Webhook, error) {
	if req.GetWebhook() == nil {
		return nil, invalid(violation("webhook", "is required"))
	}
	tenantID, id, err := parseWebhook("webhook.name", req.GetWebhook().GetName())
	if err != nil {
		return nil, err
	}
	fields, err := webhookUpdateFields(req.GetWebhook(), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	secret := req.GetWebhook().GetSigningSecret()
	var vs job.Violations
	if fields["signing_secret"] {
		if err := webhook.ValidateSecret(secret); err != nil {
			vs.Add("webhook.signingSecret", "%v", err)
		}
	}
	if fields["url"] {
		if _, err := webhook.ParseURL(req.GetWebhook().GetUrl()); err != nil {
			vs.Add("webhook.url", "%v", err)
		} else {
			s.checkURL(ctx, req.GetWebhook().GetUrl(), &vs)
		}
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	t, err := s.activeTenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if _, err := s.webhooks.WebhookGet(ctx, tenantID, id); err != nil {
		return nil, err
	}
	if fields["signing_secret"] {
		if err := s.putSecret(ctx, t, id, secret); err != nil {
			return nil, err
		}
	}
	updated, err := s.webhooks.WebhookUpdate(ctx, tenantID, id, fields["signing_secret"], func(w *webhook.Webhook) error {
		var vs job.Violations
		webhookFieldsFromPB(req.GetWebhook(), w, fields, &vs)
		vs.AddAt("webhook.", webhook.Validate(*w))
		if len(vs) > 0 {
			return invalid(vs...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return webhookToPB(updated), nil
}

// DeleteWebhook deletes the signing secret's Kubernetes Secret, then the
// webhook (and its deliveries), as DeleteSecret does.
func (s *WebhookServer) DeleteWebhook(ctx context.Context, req *pb.DeleteWebhookRequest) (*pb.DeleteWebhookResponse, error) {
	tenantID, id, err := parseWebhook("name", req.GetName())
	if err != nil {
		return nil, err
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if _, err := s.webhooks.WebhookGet(ctx, tenantID, id); err != nil {
		return nil, err
	}
	if s.kube != nil {
		if _, err := s.kube.DeleteSecret(ctx, t.Namespace, webhook.SecretName(id)); err != nil {
			return nil, (&TenantServer{deps: s.deps}).secretWriteError(ctx, tenantID, t.Namespace, webhook.SecretName(id), err)
		}
	}
	if err := s.webhooks.WebhookDelete(ctx, tenantID, id); err != nil {
		return nil, err
	}
	return &pb.DeleteWebhookResponse{}, nil
}

func (s *WebhookServer) PingWebhook(ctx context.Context, req *pb.PingWebhookRequest) (*pb.WebhookDelivery, error) {
	tenantID, id, err := parseWebhook("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if _, err := s.webhooks.WebhookGet(ctx, tenantID, id); err != nil {
		return nil, err
	}
	d, err := s.webhooks.DeliveryPing(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	return deliveryToPB(d), nil
}

func (s *WebhookServer) ListWebhookDeliveries(ctx context.Context, req *pb.ListWebhookDeliveriesRequest) (*pb.ListWebhookDeliveriesResponse, error) {
	tenantID, id, err := parseWebhook("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	n, err := pageSize("pageSize", req.GetPageSize())
	if err != nil {
		return nil, err
	}
	q := queryHash("deliveries", tenantID, id)
	before, err := decodePageToken("pageToken", req.GetPageToken(), q)
	if err != nil {
		return nil, err
	}
	list, err := s.webhooks.DeliveryList(ctx, tenantID, id, before, n+1)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListWebhookDeliveriesResponse{}
	if len(list) > n {
		list = list[:n]
		resp.NextPageToken = encodePageToken(list[n-1].ID, q)
	}
	for _, d := range list {
		resp.Deliveries = append(resp.Deliveries, deliveryToPB(d))
	}
	return resp, nil
}

func parseDelivery(field, name string) (tenantID, webhookID string, id int64, err error) {
	ids, err := parse(resname.WebhookDelivery, field, name)
	if err != nil {
		return "", "", 0, err
	}
	id, perr := strconv.ParseInt(ids[2], 10, 64)
	if perr != nil || id <= 0 {
		return "", "", 0, status.Errorf(codes.NotFound, "delivery %s does not exist in tenant %s", quote(ids[2]), quote(ids[0]))
	}
	return ids[0], ids[1], id, nil
}

func (s *WebhookServer) GetWebhookDelivery(ctx context.Context, req *pb.GetWebhookDeliveryRequest) (*pb.WebhookDelivery, error) {
	tenantID, webhookID, id, err := parseDelivery("name", req.GetName())
	if err != nil {
		return nil, err
	}
	d, err := s.webhooks.DeliveryGet(ctx, tenantID, webhookID, id)
	if err != nil {
		return nil, err
	}
	return deliveryToPB(d), nil
}

func (s *WebhookServer) RedeliverWebhookDelivery(ctx context.Context, req *pb.RedeliverWebhookDeliveryRequest) (*pb.WebhookDelivery, error) {
	tenantID, webhookID, id, err := parseDelivery("name", req.GetName())
	if err != nil {
		return nil, err
	}
	d, err := s.webhooks.DeliveryRedeliver(ctx, tenantID, webhookID, id)
	if err != nil {
		return nil, err
	}
	return deliveryToPB(d), nil
}

// RenderJob is a webhook's data for a job event: the job as ListJobs
// returns it (without log tails), in the REST gateway's JSON.
func RenderJob(j job.Job) (json.RawMessage, error) {
	return protojson.Marshal(jobSummaryToPB(j))
}

// RenderTenant is a webhook's data for a tenant event: the tenant as
// GetTenant returns it (without usage).
func RenderTenant(t tenant.Tenant) (json.RawMessage, error) {
	return protojson.Marshal(tenantToPB(t))
}
