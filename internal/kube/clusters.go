package kube

import (
	"context"
	"fmt"
	"io"
	"net"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trainyard/trainyard/internal/kube/kubeerr"
)

// Clusters is what the API server reads and writes in every cluster it
// has credentials for. Tenant Secrets are written in its home cluster (the
// one its own --kubeconfig reaches); pod logs and TensorBoards are read in
// the cluster that runs the job, by the cluster's name (jobs.cluster), with
// the credentials given for it. A job in a cluster it has none for is a
// *kubeerr.NoClusterError.
//
// In a cluster other than its home the API server needs only reads: get
// on pods/log and create on pods/portforward, in tenant namespaces, which
// that cluster's workers bind to its identity there (RenderTenant's
// APIPodLogs and APITensorBoard; deploy/README.md, "Many clusters").
type Clusters struct {
	home   string
	byName map[string]clusterAccess
}

type clusterAccess struct {
	api    APIClient
	dialer *PodDialer
}

// NewClusters builds the API server's access to each cluster of configs,
// by name; home names the cluster whose client writes Secrets and must be
// among them.
func NewClusters(home string, configs map[string]*rest.Config) (*Clusters, error) {
	if _, ok := configs[home]; !ok {
		return nil, fmt.Errorf("no credentials for the home cluster %q", home)
	}
	c := &Clusters{home: home, byName: make(map[string]clusterAccess, len(configs))}
	for name, cfg := range configs {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: %w", name, err)
		}
		d, err := NewPodDialer(cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: %w", name, err)
		}
		c.byName[name] = clusterAccess{api: APIClient{Client: client}, dialer: d}
	}
	return c, nil
}

// NewClustersFor is Clusters over ready-made clients (tests): home's
// writes Secrets; no TensorBoard is reached.
func NewClustersFor(home string, clients map[string]kubernetes.Interface) *Clusters {
	c := &Clusters{home: home, byName: map[string]clusterAccess{}}
	for name, client := range clients {
		c.byName[name] = clusterAccess{api: APIClient{Client: client}}
	}
	return c
}

// access is the cluster's; "" is the home cluster (a job placed before
// clusters had names runs there).
func (c *Clusters) access(cluster string) (clusterAccess, error) {
	if cluster == "" {
		cluster = c.home
	}
	a, ok := c.byName[cluster]
	if !ok {
		return clusterAccess{}, &kubeerr.NoClusterError{Cluster: cluster}
	}
	return a, nil
}

// PutSecret writes a tenant Secret in the home cluster (APIClient.PutSecret).
func (c *Clusters) PutSecret(ctx context.Context, tenantID, namespace, secretID string, data map[string]string) error {
	return c.byName[c.home].api.PutSecret(ctx, tenantID, namespace, secretID, data)
}

// DeleteSecret deletes a tenant Secret in the home cluster (APIClient.DeleteSecret).
func (c *Clusters) DeleteSecret(ctx context.Context, namespace, secretID string) (bool, error) {
	return c.byName[c.home].api.DeleteSecret(ctx, namespace, secretID)
}

// PodLogs streams a pod's log from the named cluster (APIClient.PodLogs).
func (c *Clusters) PodLogs(ctx context.Context, cluster, namespace, pod string, follow bool, tailLines int64) (io.ReadCloser, error) {
	a, err := c.access(cluster)
	if err != nil {
		return nil, err
	}
	return a.api.PodLogs(ctx, namespace, pod, follow, tailLines)
}

// Reaches is nil when the API server can reach pods in the named cluster,
// else a *kubeerr.NoClusterError.
func (c *Clusters) Reaches(cluster string) error {
	a, err := c.access(cluster)
	if err == nil && a.dialer == nil {
		err = &kubeerr.NoClusterError{Cluster: cluster}
	}
	return err
}

// DialTensorBoard connects to a job's TensorBoard in the named cluster
// (PodDialer.DialTensorBoard).
func (c *Clusters) DialTensorBoard(ctx context.Context, cluster, namespace, jobName string) (net.Conn, error) {
	if err := c.Reaches(cluster); err != nil {
		return nil, err
	}
	a, _ := c.access(cluster)
	return a.dialer.DialTensorBoard(ctx, namespace, jobName)
}
