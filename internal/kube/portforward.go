package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
)

// portForwardProtocol is the port-forward subprotocol the kubelet speaks
// (client-go's portforward.PortForwardProtocolV1Name, whose package would
// bring kubectl's listeners along).
const portForwardProtocol = "portforward.k8s.io"

// PodDialer opens TCP connections to a port of a pod through the
// Kubernetes API server's port-forward, the path kubectl port-forward
// takes: API server, then the pod's kubelet, then the pod's network
// namespace. The API server proxies TensorBoard this way (internal/server)
// rather than dialing the pod or its Service: it needs no route from the
// API server to pod addresses, no hole in the tenant's NetworkPolicy
// (which admits only same-namespace traffic), and one right, create on
// pods/portforward, bound in tenant namespaces only
// (RenderTenant's APITensorBoard).
type PodDialer struct {
	client   kubernetes.Interface
	upgrader spdy.Upgrader
	http     *http.Client
}

// NewPodDialer builds a dialer with the API server's identity.
func NewPodDialer(cfg *rest.Config) (*PodDialer, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	return &PodDialer{client: client, upgrader: upgrader, http: &http.Client{Transport: rt}}, nil
}

// DialTensorBoard connects to the TensorBoard of job jobName in namespace
// (its pod, on job.TensorBoardPort).
func (d *PodDialer) DialTensorBoard(ctx context.Context, namespace, jobName string) (net.Conn, error) {
	return d.DialPod(ctx, namespace, job.TensorBoardName(jobName), job.TensorBoardPort)
}

// DialPod connects to port of pod in namespace. kubeerr.ErrPodGone when the pod
// does not exist; the API server's refusal (no right) is returned wrapped.
// Each connection is its own port-forward session: TensorBoard's browser
// traffic is a few keep-alive connections, and a session per connection
// makes closing one close exactly it.
func (d *PodDialer) DialPod(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	u := d.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	conn, _, err := spdy.NewDialer(d.upgrader, d.http, http.MethodPost, u).Dial(portForwardProtocol)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s/%s", kubeerr.ErrPodGone, namespace, pod)
		}
		return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
	}
	headers := http.Header{}
	headers.Set(corev1.PortHeader, strconv.Itoa(port))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward to %s/%s: error stream: %w", namespace, pod, err)
	}
	errStream.Close() // nothing to send on it; the kubelet writes there
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward to %s/%s: data stream: %w", namespace, pod, err)
	}
	c := &podConn{conn: conn, data: data, addr: podAddr(namespace + "/" + pod + ":" + strconv.Itoa(port))}
	go c.watchErrors(errStream)
	return c, nil
}

// podConn is one port-forward session as a net.Conn.
type podConn struct {
	conn httpstream.Connection
	data httpstream.Stream
	addr podAddr

	mu     sync.Mutex
	remote error // what the kubelet reported on the error stream
	once   sync.Once
}

// watchErrors reads the kubelet's error stream: a message there (the pod
// does not listen on the port) ends the connection with it.
func (c *podConn) watchErrors(s httpstream.Stream) {
	msg, err := io.ReadAll(s)
	if err == nil && len(msg) > 0 {
		c.mu.Lock()
		c.remote = errors.New(string(msg))
		c.mu.Unlock()
		c.Close()
	}
}

func (c *podConn) Read(p []byte) (int, error) {
	n, err := c.data.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.remote != nil {
			err = c.remote
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *podConn) Write(p []byte) (int, error) { return c.data.Write(p) }

func (c *podConn) Close() error {
	c.once.Do(func() {
		_ = c.data.Reset()
		_ = c.conn.Close()
	})
	return nil
}

func (c *podConn) LocalAddr() net.Addr  { return c.addr }
func (c *podConn) RemoteAddr() net.Addr { return c.addr }

// Deadlines are not supported by the stream; http.Transport does not need
// them (its own timeouts close the connection).
func (c *podConn) SetDeadline(time.Time) error      { return nil }
func (c *podConn) SetReadDeadline(time.Time) error  { return nil }
func (c *podConn) SetWriteDeadline(time.Time) error { return nil }

type podAddr string

func (a podAddr) Network() string { return "portforward" }
func (a podAddr) String() string  { return string(a) }
