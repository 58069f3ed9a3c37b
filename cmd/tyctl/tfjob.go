package main

import (
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Kubeflow TFJob manifests. jobs submit tells a TFJob from a Trainyard job
// file by its kind and sends it to ImportTFJob as it is: the conversion is
// the server's (internal/tfjob), so tyctl, the REST API and the Python
// client all convert the same way, with the server's PriorityClass map
// and the tenant's secrets checked.

// tfjobManifest reads a manifest that declares a kind: a TFJob is returned
// for ImportTFJob; another kubeflow.org kind is an error; a file without a
// kind (a Trainyard job file) is not a manifest (nil, nil).
func tfjobManifest(data []byte) (*structpb.Struct, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil || head.Kind == "" {
		return nil, nil // not a manifest; the server (ParseJobFile) reports what is wrong
	}
	if head.Kind != "TFJob" {
		return nil, fmt.Errorf("kind %s (%s): tyctl submits Trainyard job files and Kubeflow TFJobs (kind: TFJob)", head.Kind, head.APIVersion)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return structpb.NewStruct(m)
}

// importTFJob sends a TFJob to ImportTFJob, printing the request id first
// (unless validating only) and the warnings after, on stderr.
func (a *app) importTFJob(cmd *cobra.Command, tf *structpb.Struct, id, requestID string, allowWarnings, validateOnly bool) (*pb.ImportTFJobResponse, error) {
	parent, err := a.tenantParent()
	if err != nil {
		return nil, err
	}
	c, err := a.jobClient()
	if err != nil {
		return nil, err
	}
	if requestID == "" && !validateOnly {
		requestID = uuid.NewString()
		fmt.Fprintf(a.stderr, "request id %s (to retry safely: --request-id %s)\n", requestID, requestID)
	}
	ctx, cancel := a.callCtx(cmd)
	defer cancel()
	resp, err := c.ImportTFJob(ctx, &pb.ImportTFJobRequest{
		Parent: parent, Tfjob: tf, JobId: id, RequestId: requestID, AllowWarnings: allowWarnings, ValidateOnly: validateOnly,
	})
	if err != nil {
		return nil, err
	}
	writeImportWarnings(a.stderr, resp.GetWarnings())
	return resp, nil
}

func writeImportWarnings(w io.Writer, ws []*pb.ImportWarning) {
	for _, x := range ws {
		kind := "note"
		if x.GetUnsupported() {
			kind = "warning"
		}
		fmt.Fprintf(w, "%s: %s: %s\n", kind, x.GetField(), x.GetDescription())
	}
}

func newConvertCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert manifests of other systems into Trainyard job files",
	}
	var file string
	var allowWarnings bool
	tf := &cobra.Command{
		Use:   "tfjob -f FILE",
		Short: "Print the Trainyard job a Kubeflow TFJob (kubeflow.org/v1) becomes",
		Long: `Print the Trainyard job file a Kubeflow TFJob becomes, as jobs submit -f
would create it: the server converts it (ImportTFJob with validateOnly) and
creates nothing. Fields Trainyard cannot honour are listed on stderr, one
per line, and fail the command unless --allow-warnings; notes on fields
that have no counterpart by design (metadata.namespace, status) are listed
too. The output is a job file: tyctl jobs submit -f takes it.`,
		Example: `  tyctl convert tfjob -f tf_job_mnist.yaml > mnist.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := a.readInput(file)
			if err != nil {
				return err
			}
			m, err := tfjobManifest(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if m == nil {
				return fmt.Errorf("%s: not a Kubernetes manifest (no kind); a TFJob has apiVersion kubeflow.org/v1 and kind TFJob", file)
			}
			resp, err := a.importTFJob(cmd, m, "", "", allowWarnings, true)
			if err != nil {
				return err
			}
			j := resp.GetJob()
			jobFile := &pb.Job{DisplayName: j.GetDisplayName(), Labels: j.GetLabels(), Spec: j.GetSpec()}
			if a.flags.output == outJSON {
				b, err := marshalJSON(jobFile, true)
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(b)
				return err
			}
			b, err := marshalYAML(jobFile)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "# Converted from a Kubeflow TFJob; submit it with: tyctl jobs submit -f FILE --id %s\n", lastSegment(j.GetName()))
			_, err = a.stdout.Write(b)
			return err
		},
	}
	tf.Flags().StringVarP(&file, "filename", "f", "", "TFJob manifest, YAML or JSON; - reads standard input")
	tf.Flags().BoolVar(&allowWarnings, "allow-warnings", false, "convert even when some fields cannot be honoured (they are listed)")
	_ = tf.MarkFlagRequired("filename")
	cmd.AddCommand(tf)
	return cmd
}
