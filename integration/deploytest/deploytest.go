// Package deploytest puts the identities of deploy/ on a test cluster: the
// ServiceAccounts of the API server and the worker, bound exactly as the
// manifests bind them, and kubeconfigs that authenticate as them. Tests
// then run Trainyard's processes (or the tenant reconciler) with those
// kubeconfigs, which proves the manifests' RBAC sufficient:
//
//	kubeconfig := deploytest.WorkerKubeconfig(t, harness.Cluster(t))
//
// integration/harness does this by default for every test that runs on the
// cluster (harness.Options.AdminKubeconfig opts out).
//
// Only the Namespace, the ServiceAccount, deploy/'s ClusterRoles, the
// bindings that name the account, the ValidatingAdmissionPolicies that
// confine Trainyard's identities and the ConfigMap they read their
// parameters from are applied (for real, idempotently); Deployments,
// Services and NetworkPolicies are not.
package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/trainyard/trainyard/integration/cluster"
)

// Names in deploy/.
const (
	Namespace     = "trainyard"
	WorkerAccount = "trainyard-worker"
	APIAccount    = "trainyard-api"
	// WebhooksAccount is the webhook deliverer's (deploy/base/webhooks.yaml).
	WebhooksAccount = "trainyard-webhooks"
	MigrateAccount  = "trainyard-migrate"
)

// Dir is the absolute path of deploy/ in this checkout.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy")
}

// Build renders a kustomization under deploy/ ("" for deploy/ itself,
// "monitoring" for the overlay) with the cluster's kubectl and returns its
// objects.
func Build(t testing.TB, c *cluster.Cluster, sub string) []*unstructured.Unstructured {
	t.Helper()
	out, err := kubectl(c, "kustomize", filepath.Join(Dir(), sub))
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/%s: %v", sub, err)
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatalf("decoding kubectl kustomize deploy/%s: %v", sub, err)
	}
	return objs
}

// kubectl runs the cluster's kubectl without a kubeconfig (kustomize needs
// none) and returns stdout alone: warnings on stderr do not corrupt YAML.
func kubectl(c *cluster.Cluster, args ...string) ([]byte, error) {
	bin := "kubectl"
	if c.BinDir != "" {
		bin = filepath.Join(c.BinDir, "kubectl")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

func decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// EnsureNamespace creates deploy/'s namespace and ServiceAccounts for real:
// a server-side dry run of the namespaced objects needs the namespace, and
// one of a pod needs its ServiceAccount.
func EnsureNamespace(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	objs := Build(t, c, "")
	apply(t, c, select_(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Namespace" && o.GetName() == Namespace
	}))
	apply(t, c, select_(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ServiceAccount" && o.GetNamespace() == Namespace
	}))
}

// WorkerKubeconfig applies the worker's ServiceAccount, the RBAC of
// deploy/ that binds it, deploy/'s admission policies (with the ConfigMap
// they take their parameters from) and deploy/'s ClusterRoles, and returns
// the path of a kubeconfig that authenticates as it (a TokenRequest token,
// valid 24 hours).
func WorkerKubeconfig(t testing.TB, c *cluster.Cluster) string {
	t.Helper()
	return accountKubeconfig(t, c, WorkerAccount)
}

// APIKubeconfig is WorkerKubeconfig for the API server's account. The API
// server reads pod logs only through the RoleBinding the worker's tenant
// reconciler puts into each tenant namespace (its ClusterRole is applied
// here).
func APIKubeconfig(t testing.TB, c *cluster.Cluster) string {
	t.Helper()
	return accountKubeconfig(t, c, APIAccount)
}

// WebhooksKubeconfig is WorkerKubeconfig for the webhook deliverer's
// account, which may only read Secrets.
func WebhooksKubeconfig(t testing.TB, c *cluster.Cluster) string {
	t.Helper()
	return accountKubeconfig(t, c, WebhooksAccount)
}

// applyMu serialises applies: tests of a package run in parallel against
// one cluster and apply the same objects.
var applyMu sync.Mutex

// RemoteReaderKubeconfig is the API server's identity in a cluster other
// than its own (trainyard serve --cluster-kubeconfig): the ServiceAccount
// trainyard-api and deploy/'s roles, with no binding at all. Its only
// rights are those the cluster's workers bind to it in tenant namespaces,
// get pods/log and create pods/portforward (deploy/README.md, "Many
// clusters"); it can write no Secret and read nothing else.
func RemoteReaderKubeconfig(t testing.TB, c *cluster.Cluster) string {
	t.Helper()
	return kubeconfigOf(t, c, APIAccount, false)
}

func accountKubeconfig(t testing.TB, c *cluster.Cluster, account string) string {
	t.Helper()
	return kubeconfigOf(t, c, account, true)
}

func kubeconfigOf(t testing.TB, c *cluster.Cluster, account string, bound bool) string {
	t.Helper()
	objs := Build(t, c, "")
	// The bindings of the account, as the manifests have them.
	var bindings []*unstructured.Unstructured
	params := map[string]bool{} // namespace/name of ConfigMaps admission policies read
	for _, o := range objs {
		if (o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding") && bindsAccount(o, account) {
			bindings = append(bindings, o)
		}
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			name, found, _ := unstructured.NestedString(o.Object, "spec", "paramRef", "name")
			ns, _, _ := unstructured.NestedString(o.Object, "spec", "paramRef", "namespace")
			if found {
				params[ns+"/"+name] = true
			}
		}
	}
	if !bound {
		bindings = nil
	} else if len(bindings) == 0 {
		t.Fatalf("deploy/ binds no role to ServiceAccount %s/%s", Namespace, account)
	}
	want := select_(objs, func(o *unstructured.Unstructured) bool {
		switch o.GetKind() {
		case "Namespace":
			return o.GetName() == Namespace
		case "ServiceAccount":
			return o.GetName() == account
		case "ClusterRole", "Role":
			// Every one: those bound by a ClusterRoleBinding, and those the
			// worker binds in tenant namespaces (the API server's pod logs).
			// A role bound to nothing grants nothing.
			return true
		case "ConfigMap":
			return params[o.GetNamespace()+"/"+o.GetName()]
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			return true
		}
		return false
	})
	apply(t, c, append(want, bindings...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path, err := c.ServiceAccountKubeconfig(ctx, Namespace, account)
	if err != nil {
		t.Fatalf("kubeconfig for %s/%s: %v", Namespace, account, err)
	}
	return path
}

func bindsAccount(binding *unstructured.Unstructured, account string) bool {
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	for _, s := range subjects {
		m, _ := s.(map[string]any)
		if m["kind"] == "ServiceAccount" && m["name"] == account && m["namespace"] == Namespace {
			return true
		}
	}
	return false
}

func select_(objs []*unstructured.Unstructured, keep func(*unstructured.Unstructured) bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// apply runs kubectl apply (server-side, field manager trainyard-e2e) on objs.
func apply(t testing.TB, c *cluster.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	f, err := os.CreateTemp(t.TempDir(), "deploy-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(docs, "\n---\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	applyMu.Lock()
	defer applyMu.Unlock()
	if out, err := c.Kubectl("apply", "--server-side", "--field-manager=trainyard-e2e", "--force-conflicts", "-f", f.Name()); err != nil {
		t.Fatalf("applying deploy/ objects: %v\n%s", err, out)
	}
}
