package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Labels, taints and resources of the default node set; see doc.go.
const (
	// KwokNodeAnnotation marks the nodes kwok simulates (--manage-nodes-with-annotation-selector).
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// AcceleratorLabel is set to "nvidia" on GPU nodes.
	AcceleratorLabel = "trainyard.dev/accelerator"
	// SpotLabel is set to "true" on spot nodes, which also carry the SpotTaint.
	SpotLabel = "trainyard.dev/spot"
	// PoolLabel names the node's pool: "cpu", "gpu" or "spot".
	PoolLabel = "trainyard.dev/pool"
	// GPUResource is the extended resource GPU nodes advertise.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

// SpotTaint keeps pods without a matching toleration off spot nodes.
var SpotTaint = corev1.Taint{Key: SpotLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}

// Node describes one simulated node.
type Node struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	// Capacity is also the node's allocatable.
	Capacity corev1.ResourceList
	// PodCIDR, when set, is the node's pod range; else 10.244.<index>.0/24
	// (254 addresses: enough for the 110 pods of the default nodes).
	PodCIDR string
}

// DefaultNodes is the node set Start creates when Options.Nodes is empty:
// kwok-cpu-0..3, kwok-gpu-0..1 and kwok-spot-0..1 (see doc.go).
func DefaultNodes() []Node {
	var nodes []Node
	for i := range 4 {
		nodes = append(nodes, CPUNode(fmt.Sprintf("kwok-cpu-%d", i)))
	}
	for i := range 2 {
		nodes = append(nodes, GPUNode(fmt.Sprintf("kwok-gpu-%d", i), 8))
	}
	for i := range 2 {
		nodes = append(nodes, SpotNode(fmt.Sprintf("kwok-spot-%d", i)))
	}
	return nodes
}

// CPUNode is a node with 32 CPUs, 128Gi of memory and room for 110 pods.
func CPUNode(name string) Node {
	return Node{
		Name:     name,
		Labels:   map[string]string{PoolLabel: "cpu"},
		Capacity: baseCapacity(),
	}
}

// GPUNode is a CPUNode with gpus nvidia.com/gpu and the accelerator label.
func GPUNode(name string, gpus int64) Node {
	c := baseCapacity()
	c[GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	return Node{
		Name:     name,
		Labels:   map[string]string{PoolLabel: "gpu", AcceleratorLabel: "nvidia"},
		Capacity: c,
	}
}

// SpotNode is a CPUNode labelled and tainted as a spot (preemptible) node.
func SpotNode(name string) Node {
	return Node{
		Name:     name,
		Labels:   map[string]string{PoolLabel: "spot", SpotLabel: "true"},
		Taints:   []corev1.Taint{SpotTaint},
		Capacity: baseCapacity(),
	}
}

func baseCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("128Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
}

// object renders the Node object; index picks its pod CIDR (10.244.<index>.0/24).
// The node's address comes from kwok (--node-ip=127.0.0.1): loopback, so an
// API server request to "the kubelet" (logs, exec) never leaves the machine.
func (n Node) object(index int) *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	cidr := n.PodCIDR
	if cidr == "" {
		cidr = fmt.Sprintf("10.244.%d.0/24", index)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  cidr,
			PodCIDRs: []string{cidr},
			Taints:   n.Taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    n.Capacity,
			Allocatable: n.Capacity,
			Phase:       corev1.NodePending,
		},
	}
}

func createNodes(ctx context.Context, client kubernetes.Interface, nodes []Node) error {
	for i, n := range nodes {
		_, err := client.CoreV1().Nodes().Create(ctx, n.object(i), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
	}
	return nil
}

// AddNodes adds simulated nodes to a running cluster (kwok takes them
// over) and waits until they are Ready. Benchmarks use it for room: nodes
// of more pods than a real kubelet's 110, each with a pod range large
// enough for them.
func (c *Cluster) AddNodes(ctx context.Context, nodes ...Node) error {
	if err := createNodes(ctx, c.client, nodes); err != nil {
		return err
	}
	for _, n := range nodes {
		for {
			got, err := c.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err == nil && nodeReady(got) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s not ready: %w", n.Name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
