package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/trainyard/trainyard/internal/job"
)

// EndpointSliceManagedBy is the endpointslice.kubernetes.io/managed-by
// value of the EndpointSlices Trainyard writes: the controller manager's
// EndpointSlice controller leaves slices managed by anyone else alone.
const EndpointSliceManagedBy = "worker.trainyard.dev"

// Why one Service of replicas per namespace, and EndpointSlices the worker
// writes.
//
// Replicas find each other by DNS: a pod with a hostname and a subdomain
// is <hostname>.<subdomain>.<ns>.svc once a headless Service named like
// the subdomain has an EndpointSlice listing it under that hostname.
//
// The Service has no selector. With one, the controller manager's
// Endpoints and EndpointSlice controllers keep its endpoints: every change
// of one of its pods makes each of them sync the Service, and a sync lists
// the pods of the Service's namespace from their cache and matches the
// selector against every one. A tenant namespace holds every finished pod
// its jobs kept (a day, by default), so each job cost the controller
// manager work in proportion to the namespace's history: with 10,000
// finished pods in the namespace, issue 13's dispatch bench saw it spend
// half a core on those scans alone (pprof: endpointslice syncService →
// ListAllByNamespace, 88 % of its CPU), on a machine the API server
// needed. So the worker, which already watches the job's pods and
// reconciles on their changes, writes the job's EndpointSlice itself: what
// the EndpointSlice controller would write. Its cost per job is a create
// and an update per change of a replica's address, whatever the namespace
// holds; the Endpoints object of the old API is not written at all
// (cluster DNS reads EndpointSlices).
//
// There is one such Service per tenant namespace (job.ReplicaService, kept
// by the tenant controller), not one per job. A Service per job was a
// create and a delete per job in the worker's client rate limiter (QPS
// 200 by default) and the API server: at issue 11's 50 jobs a second, one
// request in seven of what a job asked for, past the limiter's rate. Pod
// names are unique in a namespace, so hostnames under one Service are too,
// and DNS serves a Service's names from all of its slices: each job's
// slice, named after the job, lists its own replicas and their ports.

// RenderEndpointSlice renders the EndpointSlice of a job's replicas under
// the namespace's Service of replicas, from the job's replica pods alone
// (the slice controller has no job record: package worker/endpoints). The
// job's name, tenant and uid are the pods' labels; the ports are the
// distinct ports the pods' containers declare as PortName. It lists every
// replica pod that has an address, is not being deleted and has not
// finished, under its hostname (the pod's name, which TF_CONFIG uses),
// ready and serving whether or not the pod is: the Service only names the
// replicas (it publishes not-ready addresses: TensorFlow servers find each
// other while starting), and a readiness flip would be a write per pod for
// nothing. The address family is the first listed pod's (pods of the other
// family, on a dual-stack cluster, are left out: a slice holds one
// family); IPv4 when there is none. It has no owner: the slice controller
// deletes it once the job has no pods left, and the worker's orphan sweep
// what it missed. Nil without pods.
func RenderEndpointSlice(ns string, pods []*corev1.Pod) *discoveryv1.EndpointSlice {
	if len(pods) == 0 {
		return nil
	}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	first := pods[0].Labels
	labels := map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelTenant:    first[LabelTenant],
		LabelJob:       first[LabelJob],
		LabelJobUID:    first[LabelJobUID],
	}
	labels[discoveryv1.LabelServiceName] = job.ReplicaService
	labels[discoveryv1.LabelManagedBy] = EndpointSliceManagedBy
	es := &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: first[LabelJob], Namespace: ns, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, port := range podPorts(pods) {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{
			Name: ptr.To(fmt.Sprintf("tf-%d", port)), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(port),
		})
	}
	family := ""
	for _, pod := range pods {
		addr, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		f := string(discoveryv1.AddressTypeIPv4)
		if addr.Is6() && !addr.Is4In6() {
			f = string(discoveryv1.AddressTypeIPv6)
		}
		if family == "" {
			family = f
			es.AddressType = discoveryv1.AddressType(f)
		}
		if f != family {
			continue
		}
		hostname := pod.Spec.Hostname
		if hostname == "" {
			hostname = pod.Name
		}
		ep := discoveryv1.Endpoint{
			Addresses: []string{pod.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false),
			},
			Hostname:  ptr.To(hostname),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			ep.NodeName = ptr.To(pod.Spec.NodeName)
		}
		es.Endpoints = append(es.Endpoints, ep)
	}
	return es
}

// podPorts are the distinct replica ports the pods' containers declare,
// sorted.
func podPorts(pods []*corev1.Pod) []int32 {
	var ports []int32
	for _, pod := range pods {
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == PortName {
					ports = append(ports, p.ContainerPort)
				}
			}
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// EndpointSliceCurrent reports whether have already says what want does:
// same address type, ports, endpoints, owners and labels. An update is
// needed otherwise.
func EndpointSliceCurrent(have, want *discoveryv1.EndpointSlice) bool {
	return have.AddressType == want.AddressType &&
		equality.Semantic.DeepEqual(have.Ports, want.Ports) &&
		equality.Semantic.DeepEqual(nonNil(have.Endpoints), nonNil(want.Endpoints)) &&
		equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) &&
		equality.Semantic.DeepEqual(have.Labels, want.Labels)
}

func nonNil(eps []discoveryv1.Endpoint) []discoveryv1.Endpoint {
	if eps == nil {
		return []discoveryv1.Endpoint{}
	}
	return eps
}
