package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func newAuditCmd(a *app) *cobra.Command {
	var (
		all            bool
		subject        string
		action         string
		since, until   time.Duration
		limit          int
		showGroupsAddr bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show who changed what: the audit log (tenant admins: their tenant; platform admins: --all)",
		Long: `Show the audit log, newest first: every change made through the API
(tenants created, changed and offboarded; members and quota; secrets written
or deleted, by name; jobs submitted, cancelled and deleted), who made it,
when, from which address and in which request.

Tenant admins read their tenant's records (--tenant); platform admins read
any tenant's, or every tenant's with --all.`,
		Example: `  tyctl audit --since 24h
  tyctl audit --all --action tenant.update --subject alice@example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit <= 0 {
				return errors.New("--limit must be positive")
			}
			req := &pb.ListAuditRecordsRequest{Subject: subject, Action: action}
			if !all {
				parent, err := a.tenantParent()
				if err != nil {
					return err
				}
				req.Parent = parent
			}
			now := a.now()
			if since > 0 {
				req.StartTime = timestamppb.New(now.Add(-since))
			}
			if until > 0 {
				req.EndTime = timestamppb.New(now.Add(-until))
			}
			conn, err := a.connect()
			if err != nil {
				return err
			}
			c := pb.NewAuditServiceClient(conn)
			resp := &pb.ListAuditRecordsResponse{}
			for len(resp.AuditRecords) < limit {
				req.PageSize = int32(min(limit-len(resp.AuditRecords), 1000))
				ctx, cancel := a.callCtx(cmd)
				page, err := c.ListAuditRecords(ctx, req)
				cancel()
				if err != nil {
					return err
				}
				resp.AuditRecords = append(resp.AuditRecords, page.GetAuditRecords()...)
				if req.PageToken = page.GetNextPageToken(); req.PageToken == "" {
					break
				}
			}
			resp.NextPageToken = req.PageToken
			return a.print(resp, func(w io.Writer) { writeAuditTable(w, resp.GetAuditRecords(), showGroupsAddr) })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every tenant's records (platform admins)")
	cmd.Flags().StringVar(&subject, "subject", "", "only this caller's (OIDC subject) changes")
	cmd.Flags().StringVar(&action, "action", "", "only this action: tenant.create, tenant.update, tenant.offboard, secret.put, secret.delete, job.create, job.cancel, job.delete, job.suspend, job.resume")
	cmd.Flags().DurationVar(&since, "since", 0, "only records from this long ago on, e.g. 24h")
	cmd.Flags().DurationVar(&until, "until", 0, "only records older than this, e.g. 1h")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many records")
	cmd.Flags().BoolVar(&showGroupsAddr, "wide", false, "also show the caller's groups, address and request id")
	return cmd
}

func writeAuditTable(w io.Writer, recs []*pb.AuditRecord, wide bool) {
	tw := newTabWriter(w)
	head := "TIME\tTENANT\tSUBJECT\tACTION\tRESOURCE\tDETAILS"
	if wide {
		head += "\tGROUPS\tADDRESS\tREQUEST"
	}
	fmt.Fprintln(tw, head)
	for _, r := range recs {
		details := "-"
		if d := r.GetDetails(); d != nil && len(d.GetFields()) > 0 {
			if b, err := d.MarshalJSON(); err == nil {
				details = oneLine(string(b))
			}
		}
		line := strings.Join([]string{stamp(r.GetTime()), lastSegment(r.GetTenant()), r.GetActor().GetSubject(),
			r.GetAction(), r.GetResource(), details}, "\t")
		if wide {
			line += "\t" + strings.Join([]string{dash(strings.Join(r.GetActor().GetGroups(), ",")),
				dash(r.GetActor().GetAddress()), dash(r.GetActor().GetRequestId())}, "\t")
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

// stamp is a record's time, to the second, in the local zone.
func stamp(t *timestamppb.Timestamp) string {
	if t == nil {
		return "-"
	}
	return t.AsTime().Local().Format("2006-01-02 15:04:05")
}
