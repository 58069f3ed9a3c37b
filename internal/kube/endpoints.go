package kube

import (
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

// Why the worker writes each job's EndpointSlice itself.
//
// A headless Service with a selector has the controller manager's Endpoints
// and EndpointSlice controllers keep its endpoints: every change of one of
// its pods makes each of them sync the Service, and a sync lists the pods
// of the Service's namespace from their cache and matches the selector
// against every one. A tenant namespace holds every finished pod its jobs
// kept (a day, by default), so each job costs the controller manager work
// in proportion to the namespace's history: with 10,000 finished pods in
// the namespace, issue 13's dispatch bench saw it spend half a core on
// those scans alone (pprof: endpointslice syncService → ListAllByNamespace,
// 88 % of its CPU), on a machine the API server needed.
//
// So the Service has no selector, and the worker, which already watches
// the job's pods and reconciles on their changes, writes one EndpointSlice
// per job: what the EndpointSlice controller would write for it. Its cost
// per job is a create and an update per change of a replica's address,
// whatever the namespace holds; the Endpoints object of the old API is not
// written at all (cluster DNS reads EndpointSlices).

// RenderEndpointSlice renders the EndpointSlice of a job's headless Service
// svc (the one RenderService made, as created: its UID owns the slice, so
// the garbage collector removes it with the Service) from the job's replica
// pods. It lists every replica pod that has an address, is not being
// deleted and has not finished, under its hostname (the pod's name, which
// TF_CONFIG uses), ready and serving whether or not the pod is: the
// Service only names the replicas (it publishes not-ready addresses:
// TensorFlow servers find each other while starting), and a readiness flip
// would be a write per pod for nothing. The address family is the first listed pod's
// (pods of the other family, on a dual-stack cluster, are left out: a
// slice holds one family); IPv4 when there is none.
func RenderEndpointSlice(j job.Job, svc *corev1.Service, pods []*corev1.Pod) *discoveryv1.EndpointSlice {
	labels := jobLabels(j)
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = EndpointSliceManagedBy
	es := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: svc.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: ptr.To(true),
			}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, p := range svc.Spec.Ports {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{
			Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol), Port: ptr.To(p.TargetPort.IntVal),
		})
	}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
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

// EndpointSliceCurrent reports whether have already says what want does:
// same address type, ports, endpoints, owner and labels. An update is
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
