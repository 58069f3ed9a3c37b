package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trainyard/trainyard/internal/document"
	"github.com/trainyard/trainyard/internal/jobfile"
	"github.com/trainyard/trainyard/internal/resname"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func (a *app) experimentClient() (pb.ExperimentServiceClient, error) {
	conn, err := a.connect()
	if err != nil {
		return nil, err
	}
	return pb.NewExperimentServiceClient(conn), nil
}

func newExperimentsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "experiments",
		Aliases: []string{"experiment", "exp"},
		Short:   "Hyperparameter experiments: trials run as jobs, the losers stopped early",
		Long: `Manage hyperparameter experiments. An experiment is a job template with
${trial.NAME} placeholders, a search space, an objective (a metric its
trials print as "trainyard-metric loss=0.23 step=100" lines) and an
algorithm (random, grid or tpe); each trial is an ordinary job of the
tenant, id <experiment>-<index>, counted against its quota.`,
	}
	cmd.AddCommand(newExperimentsCreateCmd(a), newExperimentsGetCmd(a), newExperimentsListCmd(a), newExperimentsTrialsCmd(a),
		newExperimentsCancelCmd(a), newExperimentsDeleteCmd(a))
	return cmd
}

// parseExperimentFile reads an experiment file: YAML or JSON of the shape
// {name, spec: {template: {labels, spec}, parameters, objective, ...}}.
// The template's job spec is read as a job file's (short enum values:
// WORKER, ON_FAILURE).
func parseExperimentFile(data []byte) (name string, spec *pb.ExperimentSpec, err error) {
	js, err := document.YAMLToJSON(data, document.Limits{})
	if err != nil {
		return "", nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(js, &doc); err != nil {
		return "", nil, fmt.Errorf("want an experiment object {name, spec}: %w", err)
	}
	if raw, ok := doc["name"]; ok {
		if err := json.Unmarshal(raw, &name); err != nil {
			return "", nil, fmt.Errorf("name: %w", err)
		}
	}
	var specDoc map[string]json.RawMessage
	if raw, ok := doc["spec"]; !ok {
		return "", nil, fmt.Errorf("spec is required")
	} else if err := json.Unmarshal(raw, &specDoc); err != nil {
		return "", nil, fmt.Errorf("spec: want an object: %w", err)
	}
	tmpl := specDoc["template"]
	delete(specDoc, "template")
	rest, err := json.Marshal(specDoc)
	if err != nil {
		return "", nil, err
	}
	spec = &pb.ExperimentSpec{}
	if err := protojson.Unmarshal(rest, spec); err != nil {
		return "", nil, fmt.Errorf("spec: %w", err)
	}
	if len(tmpl) > 0 {
		jobs, err := jobfile.Parse(tmpl, document.Limits{})
		if err != nil {
			return "", nil, fmt.Errorf("spec.template: %s", strings.ReplaceAll(err.Error(), "documents[0].", ""))
		}
		spec.Template = &pb.JobTemplate{Labels: jobs[0].GetLabels(), Spec: jobs[0].GetSpec()}
	}
	return name, spec, nil
}

func newExperimentsCreateCmd(a *app) *cobra.Command {
	var file, id string
	cmd := &cobra.Command{
		Use:   "create -f FILE [--id NAME]",
		Short: "Create an experiment from a file (YAML or JSON)",
		Example: `  tyctl experiments create -f cmd/tyctl/examples/experiment.yaml
  tyctl experiments create -f sweep.yaml --id lr-sweep-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := a.readInput(file)
			if err != nil {
				return err
			}
			name, spec, err := parseExperimentFile(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if id != "" {
				name = id
			}
			if name == "" {
				return fmt.Errorf("%s: the experiment needs a name (name: in the file, or --id)", file)
			}
			parent, err := a.tenantParent()
			if err != nil {
				return err
			}
			c, err := a.experimentClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.CreateExperiment(ctx, &pb.CreateExperimentRequest{Parent: parent, ExperimentId: name, Experiment: &pb.Experiment{Spec: spec}})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "experiment %s created (%s)\n", lastSegment(out.GetName()), experimentState(out))
			})
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "experiment file (YAML or JSON); - reads standard input")
	cmd.Flags().StringVar(&id, "id", "", "experiment id (a DNS-1035 label of at most 40 characters); the file's name when empty")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func experimentState(e *pb.Experiment) string {
	s := strings.TrimPrefix(e.GetState().String(), "EXPERIMENT_STATE_")
	if e.GetStateReason() != "" {
		s += ": " + e.GetStateReason()
	}
	return s
}

func trialState(t *pb.Trial) string { return strings.TrimPrefix(t.GetState().String(), "TRIAL_STATE_") }

// formatParams writes a trial's parameters in the space's order.
func formatParams(spec *pb.ExperimentSpec, params map[string]string) string {
	var parts []string
	for _, p := range spec.GetParameters() {
		parts = append(parts, p.GetName()+"="+params[p.GetName()])
	}
	return strings.Join(parts, " ")
}

func formatValue(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

func newExperimentsGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show an experiment: state, trial counts and the best trial",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Experiment, args[0])
			if err != nil {
				return err
			}
			c, err := a.experimentClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			e, err := c.GetExperiment(ctx, &pb.GetExperimentRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(e, func(w io.Writer) {
				s := e.GetSpec()
				n := e.GetTrialCounts()
				kv := newTabWriter(w)
				fmt.Fprintf(kv, "Name:\t%s\nState:\t%s\nObjective:\t%s %s\nAlgorithm:\t%s\nTrials:\t%d running, %d succeeded, %d failed, %d stopped early, %d cancelled (max %d, %d at once)\n",
					lastSegment(e.GetName()), experimentState(e), s.GetObjective().GetDirection(), s.GetObjective().GetMetric(),
					dash(s.GetAlgorithm().GetName()), n.GetRunning(), n.GetSucceeded(), n.GetFailed(), n.GetEarlyStopped(), n.GetCancelled(),
					s.GetMaxTrials(), s.GetParallelism())
				if b := e.GetBestTrial(); b != nil {
					fmt.Fprintf(kv, "Best trial:\t%d (%s %s): %s\n", b.GetIndex(), s.GetObjective().GetMetric(), formatValue(b.Objective),
						formatParams(s, b.GetParameters()))
				} else {
					fmt.Fprintf(kv, "Best trial:\t-\n")
				}
				fmt.Fprintf(kv, "Created:\t%s\n", when(a.now(), e.GetCreateTime()))
				_ = kv.Flush()
			})
		},
	}
}

func newExperimentsListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the tenant's experiments",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parent, err := a.tenantParent()
			if err != nil {
				return err
			}
			c, err := a.experimentClient()
			if err != nil {
				return err
			}
			resp := &pb.ListExperimentsResponse{}
			for tok := ""; ; {
				ctx, cancel := a.callCtx(cmd)
				page, err := c.ListExperiments(ctx, &pb.ListExperimentsRequest{Parent: parent, PageToken: tok, PageSize: 1000})
				cancel()
				if err != nil {
					return err
				}
				resp.Experiments = append(resp.Experiments, page.GetExperiments()...)
				if tok = page.GetNextPageToken(); tok == "" {
					break
				}
			}
			return a.print(resp, func(w io.Writer) {
				tw := newTabWriter(w)
				fmt.Fprintln(tw, "NAME\tSTATE\tOBJECTIVE\tALGORITHM\tMAX TRIALS\tAGE")
				for _, e := range resp.GetExperiments() {
					s := e.GetSpec()
					fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%d\t%s\n", lastSegment(e.GetName()), strings.TrimPrefix(e.GetState().String(), "EXPERIMENT_STATE_"),
						s.GetObjective().GetDirection(), s.GetObjective().GetMetric(), s.GetAlgorithm().GetName(), s.GetMaxTrials(), age(a.now(), e.GetCreateTime()))
				}
				_ = tw.Flush()
			})
		},
	}
}

// sortTrialsBestFirst orders trials with an objective best first (by the
// direction), then the rest by index.
func sortTrialsBestFirst(trials []*pb.Trial, maximize bool) {
	key := func(t *pb.Trial) (float64, bool) {
		if t.Objective == nil || t.GetState() != pb.TrialState_TRIAL_STATE_SUCCEEDED {
			return 0, false
		}
		v := *t.Objective
		if maximize {
			v = -v
		}
		return v, !math.IsNaN(v)
	}
	sort.SliceStable(trials, func(i, j int) bool {
		a, aok := key(trials[i])
		b, bok := key(trials[j])
		switch {
		case aok && bok:
			return a < b
		case aok != bok:
			return aok
		}
		return trials[i].GetIndex() < trials[j].GetIndex()
	})
}

func newExperimentsTrialsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "trials NAME",
		Short: "List an experiment's trials, best first: parameters, state, objective",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Experiment, args[0])
			if err != nil {
				return err
			}
			c, err := a.experimentClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			e, err := c.GetExperiment(ctx, &pb.GetExperimentRequest{Name: name})
			if err != nil {
				return err
			}
			resp, err := c.ListTrials(ctx, &pb.ListTrialsRequest{Parent: name})
			if err != nil {
				return err
			}
			trials := slices.Clone(resp.GetTrials())
			sortTrialsBestFirst(trials, e.GetSpec().GetObjective().GetDirection() == "maximize")
			return a.print(&pb.ListTrialsResponse{Trials: trials}, func(w io.Writer) {
				writeTrialTable(w, e.GetSpec(), trials)
			})
		},
	}
}

func writeTrialTable(w io.Writer, spec *pb.ExperimentSpec, trials []*pb.Trial) {
	tw := newTabWriter(w)
	var head []string
	for _, p := range spec.GetParameters() {
		head = append(head, strings.ToUpper(p.GetName()))
	}
	metric := strings.ToUpper(spec.GetObjective().GetMetric())
	fmt.Fprintf(tw, "TRIAL\tSTATE\t%s\tBEST %s (STEP)\tLAST STEP\t%s\n", metric, metric, strings.Join(head, "\t"))
	for _, t := range trials {
		var vals []string
		for _, p := range spec.GetParameters() {
			vals = append(vals, t.GetParameters()[p.GetName()])
		}
		best := "-"
		if t.BestValue != nil {
			best = fmt.Sprintf("%s (%d)", formatValue(t.BestValue), t.GetBestStep())
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", t.GetIndex(), trialState(t), formatValue(t.Objective), best, t.GetLastStep(),
			strings.Join(vals, "\t"))
	}
	_ = tw.Flush()
}

func newExperimentsCancelCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel a running experiment and its running trials' jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Experiment, args[0])
			if err != nil {
				return err
			}
			c, err := a.experimentClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			e, err := c.CancelExperiment(ctx, &pb.CancelExperimentRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(e, func(w io.Writer) { fmt.Fprintf(w, "experiment %s %s\n", lastSegment(e.GetName()), experimentState(e)) })
		},
	}
}

func newExperimentsDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an experiment that has ended (its trials' jobs stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Experiment, args[0])
			if err != nil {
				return err
			}
			c, err := a.experimentClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.DeleteExperiment(ctx, &pb.DeleteExperimentRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { fmt.Fprintf(w, "experiment %s deleted\n", lastSegment(name)) })
		},
	}
}
