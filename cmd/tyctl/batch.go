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

	"github.com/trainyard/trainyard/internal/jobfile"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// jobs submit -f takes one job file, a file of several YAML documents
// (separated by ---), or a directory of them (*.yaml, *.yml, *.json, in
// name order, not recursive). tyctl does not read job files itself: it
// sends each file's text to ParseJobFile, where the server applies the
// lenient rules (internal/jobfile), and creates the jobs that come back.
// More than one job goes to BatchCreateJobs, 1,000 per call: each call
// creates all of its jobs or none. A document's name (its last segment, so
// "tenants/x/jobs/a" and "a" alike) is its job id; without one the server
// generates it. Every job gets the request id "<request id>-<n>", n
// counting documents from 0, so that re-running the same command with the
// same --request-id after a failure or a timeout creates nothing twice.
// TFJob manifests are submitted one file at a time.

// jobFile is one file of the input and its non-empty documents.
type jobFile struct {
	path string
	data []byte
	docs [][]byte // jobfile.Documents(data): for counting and messages only
}

// where names document i of f in messages: "file", or "file#i" in a file
// of several documents.
func (f jobFile) where(i int) string {
	if len(f.docs) > 1 {
		return fmt.Sprintf("%s#%d", f.path, i)
	}
	return f.path
}

// jobFiles reads path (a file, "-" or a directory) into its files, and
// counts their non-empty documents.
func (a *app) jobFiles(path string) ([]jobFile, int, error) {
	paths := []string{path}
	if path != "-" {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			entries, err := os.ReadDir(path)
			if err != nil {
				return nil, 0, err
			}
			paths = nil
			for _, e := range entries {
				switch strings.ToLower(filepath.Ext(e.Name())) {
				case ".yaml", ".yml", ".json":
					if !e.IsDir() {
						paths = append(paths, filepath.Join(path, e.Name()))
					}
				}
			}
			slices.Sort(paths)
			if len(paths) == 0 {
				return nil, 0, fmt.Errorf("%s: no *.yaml, *.yml or *.json files", path)
			}
		}
	}
	var (
		files []jobFile
		n     int
	)
	for _, p := range paths {
		data, err := a.readInput(p)
		if err != nil {
			return nil, 0, err
		}
		f := jobFile{path: p, data: data, docs: jobfile.Documents(data)}
		if len(f.docs) > 0 {
			files = append(files, f)
			n += len(f.docs)
		}
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("%s: the file is empty", path)
	}
	return files, n, nil
}

var documentIndex = regexp.MustCompile(`documents\[(\d+)\](\.|: )?`)

// parseJobFiles sends every file to ParseJobFile and returns the jobs in
// document order, with where each came from. The server's
// "documents[i]" in an error becomes the document's name ("file#i").
func (a *app) parseJobFiles(cmd *cobra.Command, c pb.JobServiceClient, parent string, files []jobFile) ([]*pb.Job, []string, error) {
	var (
		jobs   []*pb.Job
		wheres []string
	)
	for _, f := range files {
		ctx, cancel := a.callCtx(cmd)
		resp, err := c.ParseJobFile(ctx, &pb.ParseJobFileRequest{Parent: parent, Content: string(f.data)}) // no filename: tyctl names the documents itself
		cancel()
		if err != nil {
			return nil, nil, rewriteStatus(err, func(s string) string {
				s = strings.ReplaceAll(s, "content: ", f.path+": ")
				if s == "content" {
					return f.path
				}
				return documentIndex.ReplaceAllStringFunc(s, func(m string) string {
					var i int
					fmt.Sscanf(m, "documents[%d]", &i)
					if strings.HasSuffix(m, "]") {
						return f.where(i)
					}
					return f.where(i) + ": "
				})
			})
		}
		if len(resp.GetJobs()) != len(f.docs) {
			return nil, nil, fmt.Errorf("%s: the server read %d jobs from %d documents", f.path, len(resp.GetJobs()), len(f.docs))
		}
		for i, j := range resp.GetJobs() {
			jobs = append(jobs, j)
			wheres = append(wheres, f.where(i))
		}
	}
	return jobs, wheres, nil
}

// maxBatch is BatchCreateJobs's limit per call.
const maxBatch = 1000

// submitBatch sends every document as a job, maxBatch per call.
func (a *app) submitBatch(cmd *cobra.Command, files []jobFile, requestID string) error {
	parent, err := a.tenantParent()
	if err != nil {
		return err
	}
	c, err := a.jobClient()
	if err != nil {
		return err
	}
	parsed, wheres, err := a.parseJobFiles(cmd, c, parent, files)
	if err != nil {
		return err
	}
	reqs := make([]*pb.CreateJobRequest, len(parsed))
	for i, j := range parsed {
		id := lastSegment(j.GetName())
		j.Name = ""
		reqs[i] = &pb.CreateJobRequest{Job: j, JobId: id}
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
			return batchError(err, start, wheres)
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
func batchError(err error, offset int, wheres []string) error {
	return rewriteStatus(err, func(s string) string {
		return itemIndex.ReplaceAllStringFunc(s, func(m string) string {
			var i int
			fmt.Sscanf(m, "requests[%d]", &i)
			if i+offset < len(wheres) {
				return wheres[i+offset] + ": "
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
