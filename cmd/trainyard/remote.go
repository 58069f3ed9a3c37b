package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/agentclient"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/scheduler"
	"github.com/trainyard/trainyard/internal/tenantctl"
	"github.com/trainyard/trainyard/internal/worker"
)

// The remote agent's storage is the control plane's AgentService.
var (
	_ worker.Store           = (*agentclient.Client)(nil)
	_ worker.ClusterStore    = (*agentclient.Client)(nil)
	_ tenantctl.Store        = (*agentclient.Client)(nil)
	_ tenantctl.SecretSource = (*agentclient.Client)(nil)
)

// runRemoteWorker runs a remote cluster's agent (issue 45): the job
// reconciler, the tenant reconciler and the cluster's heartbeat, over the
// API server's AgentService instead of Postgres. The scheduler's
// informers run for the heartbeat's nodes; its loop, the cluster sweep,
// experiments and GPU utilisation are the control plane's workers'.
func runRemoteWorker(ctx context.Context, log *slog.Logger, common *commonFlags, wf *workerFlags) error {
	cp, err := agentclient.New(agentclient.Config{
		Address: wf.controlPlane, TokenFile: wf.agentTokenFile,
		CAFile: wf.controlPlaneCAFile, Plaintext: wf.controlPlanePlaintext,
	})
	if err != nil {
		return fmt.Errorf("--control-plane: %w", err)
	}
	defer cp.Close()
	kc, podWatch, watch, err := workerClients(common, log)
	if err != nil {
		return err
	}
	pods := kube.PodInformers(podWatch)
	defer pods.Shutdown()
	id := wf.id
	if id == "" {
		id = defaultWorkerID()
	}
	log = log.With("cluster", wf.cluster)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	w, err := worker.New(worker.Config{
		ID: id, Store: cp, Cluster: wf.cluster, Kube: kc, Watch: watch, Pods: pods,
		Concurrency: wf.concurrency, LeaseTTL: wf.leaseTTL, MaxOwnedJobs: wf.maxOwnedJobs, ClaimInterval: wf.claimInterval,
		UnschedulableTimeout: wf.unschedulableTimeout, RequeueBackoff: wf.requeueBackoff, RequeueBackoffMax: wf.requeueBackoffMax,
		PodOptions:   kube.PodOptions{MaxGracePeriod: wf.maxGracePeriod},
		LogTailLines: wf.logTailLines, LogTailBytes: wf.logTailBytes, FinishedTTL: wf.finishedTTL,
		Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	// The scheduler's informers only (Observe): the nodes the heartbeat
	// publishes, read as the control plane's scheduler reads them.
	sch, err := scheduler.New(scheduler.Config{ID: id, Kube: watch, Cluster: wf.cluster, Pods: pods, Registry: reg, Logger: log})
	if err != nil {
		return err
	}
	agent, err := worker.NewClusterAgent(worker.ClusterAgentConfig{
		Cluster: wf.cluster, Agent: id, Store: cp, Nodes: sch.ClusterNodes,
		Heartbeat: wf.clusterHeartbeat, Timeout: wf.clusterTimeout, LostGrace: wf.clusterLostGrace,
		Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	// The tenants allowed in this cluster, with copies of their Secrets
	// (the API server writes them in its own cluster).
	tenants, err := tenantctl.New(tenantctl.Config{
		Store: cp, Client: kc, Remote: true, Cluster: wf.cluster, Secrets: cp,
		NamespacePrefix: common.kube.namespacePrefix,
		Options:         wf.tenantOptions(), Resync: remoteTenantResync,
		Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	// Cut off from the control plane past its requeue point (less the
	// pods' grace), the agent deletes its cluster's job pods: their
	// copies may start elsewhere then (worker.SelfFence).
	fence, err := worker.NewSelfFence(worker.SelfFenceConfig{
		LastContact: cp.LastContact, RequeueAfter: cp.RequeueAfter, Kube: kc,
		Margin: wf.maxGracePeriod + 30*time.Second, Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	if wf.metricsAddr != "" {
		stop, err := serveWorkerMetrics(ctx, log, wf.metricsAddr, reg, w)
		if err != nil {
			return err
		}
		defer stop()
	}
	log.Info("remote agent: reaching the control plane only", "control_plane", wf.controlPlane, "cluster", wf.cluster)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg                   sync.WaitGroup
		workerErr, tenantErr error
	)
	wg.Go(func() { _ = agent.Run(ctx) })
	wg.Go(func() { _ = sch.Observe(ctx) })
	wg.Go(func() { fence.Run(ctx) })
	// The only writer of this cluster's EndpointSlices: the scheduler
	// lease's holder writes its own cluster's only.
	wg.Go(func() { w.LeadEndpoints(ctx) })
	wg.Go(func() {
		defer cancel()
		workerErr = w.Run(ctx)
	})
	wg.Go(func() {
		defer cancel()
		if tenantErr = tenants.Run(ctx); tenantErr != nil {
			log.Error("tenant reconciler stopped", "error", tenantErr)
		}
	})
	wg.Wait()
	return errors.Join(workerErr, tenantErr)
}

// remoteTenantResync is how often a remote agent reads every tenant: it
// gets no notifications, so a tenant created on the control plane
// appears in its cluster within this.
const remoteTenantResync = 10 * time.Second
