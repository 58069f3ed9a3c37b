package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// jobs submit -f takes one job file, a file of several YAML documents
// (separated by ---), or a directory of them (*.yaml, *.yml, *.json, in
// name order, not recursive). More than one job goes to BatchCreateJobs,
// 1,000 per call: each call creates all of its jobs or none. A document's
// name (its last segment, so "tenants/x/jobs/a" and "a" alike) is its job
// id; without one the server generates it. Every job gets the request id
// "<request id>-<n>", n counting documents from 0, so that re-running the
// same command with the same --request-id after a failure or a timeout
// creates nothing twice. TFJob manifests are submitted one file at a time.

// jobDoc is one document of the input.
type jobDoc struct {
	where string // "file" or "file#2", for messages
	data  []byte
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// jobDocuments reads path (a file, "-" or a directory) into its non-empty
// documents.
func (a *app) jobDocuments(path string) ([]jobDoc, error) {
	files := []string{path}
	if path != "-" {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			entries, err := os.ReadDir(path)
			if err != nil {
				return nil, err
			}
			files = nil
			for _, e := range entries {
				switch strings.ToLower(filepath.Ext(e.Name())) {
				case ".yaml", ".yml", ".json":
					if !e.IsDir() {
						files = append(files, filepath.Join(path, e.Name()))
					}
				}
			}
			slices.Sort(files)
			if len(files) == 0 {
				return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files", path)
			}
		}
	}
	var docs []jobDoc
	for _, f := range files {
		data, err := a.readInput(f)
		if err != nil {
			return nil, err
		}
		parts := docSeparator.Split(string(data), -1)
		n := 0
		for _, p := range parts {
			if strings.TrimSpace(stripComments(p)) == "" {
				continue
			}
			where := f
			if len(parts) > 1 {
				where = fmt.Sprintf("%s#%d", f, n)
			}
			docs = append(docs, jobDoc{where: where, data: []byte(p)})
			n++
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: the file is empty", path)
	}
	return docs, nil
}

// stripComments drops YAML comment lines, to tell an empty document.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// maxBatch is BatchCreateJobs's limit per call.
const maxBatch = 1000

// submitBatch sends every document as a job, maxBatch per call.
func (a *app) submitBatch(cmd *cobra.Command, docs []jobDoc, requestID string) error {
	reqs := make([]*pb.CreateJobRequest, len(docs))
	var bad problems
	for i, d := range docs {
		if tf, err := tfjobManifest(d.data); err != nil || tf != nil {
			bad = append(bad, d.where+": submit Kubeflow TFJobs one file at a time")
			continue
		}
		j, err := parseJobFile(d.data)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", d.where, err))
			continue
		}
		id := lastSegment(j.GetName())
		j.Name = ""
		reqs[i] = &pb.CreateJobRequest{Job: j, JobId: id}
	}
	if len(bad) > 0 {
		return bad
	}
	parent, err := a.tenantParent()
	if err != nil {
		return err
	}
	c, err := a.jobClient()
	if err != nil {
		return err
	}
	if requestID == "" {
		requestID = uuid.NewString()
		fmt.Fprintf(a.stderr, "request id %s (to retry safely: --request-id %s)\n", requestID, requestID)
	}
	for i, r := range reqs {
		r.RequestId = fmt.Sprintf("%s-%d", requestID, i)
	}
	var jobs []*pb.Job
	for start := 0; start < len(reqs); start += maxBatch {
		chunk := reqs[start:min(start+maxBatch, len(reqs))]
		ctx, cancel := a.callCtx(cmd)
		resp, err := c.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: parent, Requests: chunk})
		cancel()
		if err != nil {
			if start > 0 {
				fmt.Fprintf(a.stderr, "the first %d jobs were submitted; rerun with --request-id %s to submit the rest\n", start, requestID)
			}
			return batchError(err, start, docs)
		}
		jobs = append(jobs, resp.GetJobs()...)
	}
	return a.print(&pb.BatchCreateJobsResponse{Jobs: jobs}, func(w io.Writer) {
		for _, j := range jobs {
			fmt.Fprintf(w, "job %s submitted (%s)\n", lastSegment(j.GetName()), jobState(j))
		}
	})
}

var itemIndex = regexp.MustCompile(`requests\[(\d+)\](\.|: )?`)

// batchError says which documents the server's "requests[i]" are, for a
// call whose first item was document offset.
func batchError(err error, offset int, docs []jobDoc) error {
	return rewriteStatus(err, func(s string) string {
		return itemIndex.ReplaceAllStringFunc(s, func(m string) string {
			var i int
			fmt.Sscanf(m, "requests[%d]", &i)
			if i+offset < len(docs) {
				return docs[i+offset].where + ": "
			}
			return m
		})
	})
}

// rewriteStatus applies fn to a server status's message and to the fields
// of its BadRequest; anything else is returned as it is.
func rewriteStatus(err error, fn func(string) string) error {
	st, _ := serverStatus(err)
	if st == nil {
		return err
	}
	out := status.New(st.Code(), fn(st.Message()))
	var details []protoadapt.MessageV1
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			br = proto.Clone(br).(*errdetails.BadRequest)
			for _, v := range br.GetFieldViolations() {
				v.Field = fn(v.GetField())
			}
			details = append(details, br)
		} else if m, ok := d.(protoadapt.MessageV1); ok {
			details = append(details, m)
		}
	}
	if len(details) > 0 {
		if withDetails, err := out.WithDetails(details...); err == nil {
			out = withDetails
		}
	}
	return out.Err()
}
