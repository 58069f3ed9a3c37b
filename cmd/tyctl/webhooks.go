package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/webhook"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// A webhook's signing secret goes from a file (or one generated here,
// printed once) into the request; the server never returns it.

func (a *app) webhookClient() (pb.WebhookServiceClient, error) {
	conn, err := a.connect()
	if err != nil {
		return nil, err
	}
	return pb.NewWebhookServiceClient(conn), nil
}

func newWebhooksCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "webhooks",
		Aliases: []string{"webhook"},
		Short:   "Manage the tenant's webhooks: signed CloudEvents on job events (tenant admins)",
		Long: `Manage the tenant's webhooks. Each gets a CloudEvent (structured JSON) for
every event it subscribes to, signed as Standard Webhooks says (webhook-id,
webhook-timestamp, webhook-signature), at least once, in order per job.

Event types: ` + strings.Join(webhook.Topics, ", ") + ` (or "all").`,
	}
	cmd.AddCommand(newWebhooksCreateCmd(a), newWebhooksListCmd(a), newWebhooksGetCmd(a), newWebhooksUpdateCmd(a),
		newWebhooksDeleteCmd(a), newWebhooksPingCmd(a), newWebhooksDeliveriesCmd(a), newWebhooksRedeliverCmd(a))
	return cmd
}

// webhookOpts are the flags create and update share.
type webhookOpts struct {
	url, description, secretFile string
	events, selector             []string
	generateSecret               bool
}

func (o *webhookOpts) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.url, "url", "", "where events are POSTed (http or https)")
	cmd.Flags().StringSliceVar(&o.events, "events", nil, "event types, comma-separated, or all")
	cmd.Flags().StringArrayVar(&o.selector, "selector", nil, "KEY=VALUE: only jobs with this label (repeatable; all must match)")
	cmd.Flags().StringVar(&o.description, "description", "", "what the webhook is for")
	cmd.Flags().StringVar(&o.secretFile, "secret-file", "", "a file holding the signing secret (whsec_ and base64 of 24-64 bytes)")
	cmd.Flags().BoolVar(&o.generateSecret, "generate-secret", false, "generate the signing secret here and print it once (the server never shows it)")
}

// build fills w from the flags that were given; mask gets their paths.
func (o *webhookOpts) build(a *app, cmd *cobra.Command, w *pb.Webhook) (mask []string, newSecret string, err error) {
	fl := cmd.Flags()
	if fl.Changed("url") {
		w.Url = o.url
		mask = append(mask, "url")
	}
	if fl.Changed("events") {
		for _, e := range o.events {
			types, err := eventTypes(e)
			if err != nil {
				return nil, "", err
			}
			w.EventTypes = append(w.EventTypes, types...)
		}
		mask = append(mask, "event_types")
	}
	if fl.Changed("selector") {
		if w.LabelSelector, err = parsePairs("selector", o.selector); err != nil {
			return nil, "", err
		}
		mask = append(mask, "label_selector")
	}
	if fl.Changed("description") {
		w.Description = o.description
		mask = append(mask, "description")
	}
	switch {
	case o.generateSecret && o.secretFile != "":
		return nil, "", fmt.Errorf("give --secret-file or --generate-secret, not both")
	case o.generateSecret:
		newSecret = webhook.NewSecret()
		w.SigningSecret = newSecret
		mask = append(mask, "signing_secret")
	case o.secretFile != "":
		b, err := a.readFile(o.secretFile)
		if err != nil {
			return nil, "", err
		}
		w.SigningSecret = strings.TrimSpace(string(b))
		mask = append(mask, "signing_secret")
	}
	return mask, newSecret, nil
}

// eventTypes turns "job.succeeded" (or "all") into the API's values.
func eventTypes(s string) ([]pb.WebhookEventType, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "all" {
		var out []pb.WebhookEventType
		for _, t := range webhook.Topics {
			v, _ := eventTypes(t)
			out = append(out, v...)
		}
		return out, nil
	}
	v, ok := pb.WebhookEventType_value["WEBHOOK_EVENT_TYPE_"+strings.ToUpper(strings.ReplaceAll(s, ".", "_"))]
	if !ok || v == 0 || !webhook.KnownTopic(s) {
		return nil, fmt.Errorf("--events: unknown event type %q; want one of %s, or all", s, strings.Join(webhook.Topics, ", "))
	}
	return []pb.WebhookEventType{pb.WebhookEventType(v)}, nil
}

// topicOf is the short form of an event type: job.succeeded.
func topicOf(t pb.WebhookEventType) string {
	s := strings.ToLower(strings.TrimPrefix(t.String(), "WEBHOOK_EVENT_TYPE_"))
	return strings.Replace(s, "_", ".", 1)
}

func printNewSecret(w io.Writer, secret string) {
	if secret != "" {
		fmt.Fprintf(w, "signing secret (shown only now; give it to the receiver): %s\n", secret)
	}
}

func newWebhooksCreateCmd(a *app) *cobra.Command {
	var o webhookOpts
	cmd := &cobra.Command{
		Use:   "create NAME --url URL --events TYPES (--generate-secret | --secret-file PATH)",
		Short: "Create a webhook",
		Example: `  tyctl webhooks create registry --url https://registry.example.com/hooks/trainyard \
      --events job.succeeded,job.failed --selector pipeline=publish --generate-secret`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			w := &pb.Webhook{}
			if _, _, err := o.build(a, cmd, w); err != nil {
				return err
			}
			newSecret := ""
			if o.generateSecret {
				newSecret = w.SigningSecret
			} else if o.secretFile == "" {
				return fmt.Errorf("a signing secret is required: --generate-secret or --secret-file PATH")
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			ids, _ := resname.Webhook.Parse(name)
			out, err := c.CreateWebhook(ctx, &pb.CreateWebhookRequest{Parent: resname.Tenant.Format(ids[0]), WebhookId: ids[1], Webhook: w})
			if err != nil {
				return err
			}
			// The secret goes to stderr with -o json|yaml, so the document stays clean.
			if a.flags.output != "" && a.flags.output != "table" {
				printNewSecret(a.stderr, newSecret)
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "webhook %s created\n", lastSegment(out.GetName()))
				printNewSecret(w, newSecret)
			})
		},
	}
	o.register(cmd)
	return cmd
}

func newWebhooksUpdateCmd(a *app) *cobra.Command {
	var (
		o               webhookOpts
		enable, disable bool
	)
	cmd := &cobra.Command{
		Use:   "update NAME [--url URL] [--events TYPES] [--selector K=V] [--enable | --disable] [--generate-secret | --secret-file PATH]",
		Short: "Change a webhook; --enable sends what waited while it was disabled",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			w := &pb.Webhook{Name: name}
			mask, newSecret, err := o.build(a, cmd, w)
			if err != nil {
				return err
			}
			switch {
			case enable && disable:
				return fmt.Errorf("give --enable or --disable, not both")
			case enable:
				w.State = pb.WebhookState_WEBHOOK_STATE_ACTIVE
				mask = append(mask, "state")
			case disable:
				w.State = pb.WebhookState_WEBHOOK_STATE_DISABLED
				mask = append(mask, "state")
			}
			if len(mask) == 0 {
				return fmt.Errorf("nothing to change: give --url, --events, --selector, --description, --enable, --disable or a secret")
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.UpdateWebhook(ctx, &pb.UpdateWebhookRequest{Webhook: w, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}})
			if err != nil {
				return err
			}
			if a.flags.output != "" && a.flags.output != "table" {
				printNewSecret(a.stderr, newSecret)
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "webhook %s updated (%s)\n", lastSegment(out.GetName()), webhookState(out))
				printNewSecret(w, newSecret)
			})
		},
	}
	o.register(cmd)
	cmd.Flags().BoolVar(&enable, "enable", false, "make it ACTIVE again")
	cmd.Flags().BoolVar(&disable, "disable", false, "stop sending to it (what comes meanwhile waits)")
	return cmd
}

func webhookState(w *pb.Webhook) string {
	s := strings.TrimPrefix(w.GetState().String(), "WEBHOOK_STATE_")
	if w.GetStateReason() != "" {
		s += ": " + w.GetStateReason()
	}
	return s
}

func newWebhooksListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the tenant's webhooks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parent, err := a.tenantParent()
			if err != nil {
				return err
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.ListWebhooks(ctx, &pb.ListWebhooksRequest{Parent: parent})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) {
				tw := newTabWriter(w)
				fmt.Fprintln(tw, "NAME\tSTATE\tURL\tEVENTS\tSELECTOR")
				for _, h := range resp.GetWebhooks() {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", lastSegment(h.GetName()), strings.TrimPrefix(h.GetState().String(), "WEBHOOK_STATE_"),
						h.GetUrl(), eventList(h), dash(formatMap(h.GetLabelSelector())))
				}
				_ = tw.Flush()
			})
		},
	}
}

func eventList(h *pb.Webhook) string {
	var out []string
	for _, t := range h.GetEventTypes() {
		out = append(out, topicOf(t))
	}
	return strings.Join(out, ",")
}

func newWebhooksGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a webhook (never its secret)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			h, err := c.GetWebhook(ctx, &pb.GetWebhookRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(h, func(w io.Writer) {
				kv := newTabWriter(w)
				fmt.Fprintf(kv, "Name:\t%s\nURL:\t%s\nState:\t%s\nEvents:\t%s\nSelector:\t%s\nDescription:\t%s\nCreated:\t%s\n",
					lastSegment(h.GetName()), h.GetUrl(), webhookState(h), eventList(h), dash(formatMap(h.GetLabelSelector())),
					dash(h.GetDescription()), when(a.now(), h.GetCreateTime()))
				_ = kv.Flush()
			})
		},
	}
}

func newWebhooksDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a webhook, its secret and its delivery log",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.DeleteWebhook(ctx, &pb.DeleteWebhookRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { fmt.Fprintf(w, "webhook %s deleted\n", lastSegment(name)) })
		},
	}
}

func newWebhooksPingCmd(a *app) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "ping NAME",
		Short: "Send a test event (dev.trainyard.webhook.ping) and show how it went",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			d, err := c.PingWebhook(ctx, &pb.PingWebhookRequest{Name: name})
			if err != nil {
				return err
			}
			// Wait for its first attempt.
			deadline := time.Now().Add(wait)
			for d.GetAttempts() == 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				if d, err = c.GetWebhookDelivery(ctx, &pb.GetWebhookDeliveryRequest{Name: d.GetName()}); err != nil {
					return err
				}
			}
			return a.print(d, func(w io.Writer) { writeDeliveries(w, []*pb.WebhookDelivery{d}, a.now()) })
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the first attempt; 0 returns at once")
	return cmd
}

func newWebhooksDeliveriesCmd(a *app) *cobra.Command {
	var limit int32
	cmd := &cobra.Command{
		Use:   "deliveries NAME",
		Short: "List a webhook's deliveries, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.ListWebhookDeliveries(ctx, &pb.ListWebhookDeliveriesRequest{Parent: name, PageSize: limit})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { writeDeliveries(w, resp.GetDeliveries(), a.now()) })
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 20, "most deliveries shown")
	return cmd
}

func writeDeliveries(w io.Writer, ds []*pb.WebhookDelivery, now time.Time) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "ID\tTYPE\tSUBJECT\tSTATE\tATTEMPTS\tCODE\tLATENCY\tLAST ERROR\tAGE")
	for _, d := range ds {
		code := "-"
		if d.GetLastStatusCode() > 0 {
			code = strconv.Itoa(int(d.GetLastStatusCode()))
		}
		latency := "-"
		if d.GetAttempts() > 0 {
			latency = d.GetLastLatency().AsDuration().Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", lastSegment(d.GetName()),
			strings.TrimPrefix(d.GetType(), "dev.trainyard."), d.GetSubject(), strings.TrimPrefix(d.GetState().String(), "DELIVERY_STATE_"),
			d.GetAttempts(), code, latency, dash(oneLine(d.GetLastError())), age(now, d.GetCreateTime()))
	}
	_ = tw.Flush()
}

func newWebhooksRedeliverCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "redeliver NAME DELIVERY_ID",
		Short: "Send a delivery again (the same event, the same webhook-id)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Webhook, args[0])
			if err != nil {
				return err
			}
			c, err := a.webhookClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			d, err := c.RedeliverWebhookDelivery(ctx, &pb.RedeliverWebhookDeliveryRequest{Name: name + "/deliveries/" + args[1]})
			if err != nil {
				return err
			}
			return a.print(d, func(w io.Writer) { fmt.Fprintf(w, "delivery %s queued again\n", lastSegment(d.GetName())) })
		},
	}
}
