package cluster

import (
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigSpec is what one kubeconfig holds: one cluster, one user.
type kubeconfigSpec struct {
	server string
	caPEM  []byte
	// Either a client certificate (PEM) and key, or a bearer token.
	certPEM, keyPEM []byte
	token           string
	user            string
	namespace       string
}

// writeKubeconfig writes a self-contained kubeconfig (certificates inline),
// so the file can be copied or handed to another process as is.
func writeKubeconfig(path string, s kubeconfigSpec) error {
	const name = "trainyard-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.server, CertificateAuthorityData: s.caPEM}
	cfg.AuthInfos[s.user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: s.certPEM,
		ClientKeyData:         s.keyPEM,
		Token:                 s.token,
	}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: s.user, Namespace: s.namespace}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// clientKubeconfig writes a kubeconfig that authenticates as id with the
// client certificate pki issued for it.
func (p *pki) clientKubeconfig(path, server string, id identity) error {
	cert, err := os.ReadFile(p.path(id.file + ".crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.path(id.file + ".key"))
	if err != nil {
		return err
	}
	return writeKubeconfig(path, kubeconfigSpec{server: server, caPEM: p.caPEM, certPEM: cert, keyPEM: key, user: id.user})
}
