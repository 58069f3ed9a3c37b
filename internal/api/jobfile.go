package api

import (
	"context"
	"errors"

	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/document"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/jobfile"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// ParseJobFile reads a job file (internal/jobfile: the lenient rules, one
// place for every client) into jobs and creates nothing. What cannot be
// read is INVALID_ARGUMENT, one violation per problem at its path under
// "documents[i]"; a problem of the whole file (empty, too large) is at
// "content"; the status message starts with the request's filename when
// it has one. The jobs are not validated: CreateJob does that when they
// are sent.
func (s *JobServer) ParseJobFile(_ context.Context, req *pb.ParseJobFileRequest) (*pb.ParseJobFileResponse, error) {
	if _, err := parseTenant("parent", req.GetParent()); err != nil {
		return nil, err
	}
	jobs, err := jobfile.Parse([]byte(req.GetContent()), document.Limits{})
	if err != nil {
		var problems jobfile.Error
		if !errors.As(err, &problems) {
			return nil, invalid(violation("content", err.Error()))
		}
		vs := make(job.Violations, 0, len(problems))
		for _, p := range problems {
			field := p.Field
			if field == "" {
				field = "content"
			}
			vs = append(vs, violation(field, p.Reason))
		}
		return nil, withFilename(req.GetFilename(), invalid(vs...))
	}
	return &pb.ParseJobFileResponse{Jobs: jobs}, nil
}

// withFilename puts name before the message of err, a status; its details
// (the violations, at paths within the file) are kept.
func withFilename(name string, err error) error {
	if name == "" {
		return err
	}
	st := status.Convert(err).Proto()
	st.Message = name + ": " + st.GetMessage()
	return status.FromProto(st).Err()
}
