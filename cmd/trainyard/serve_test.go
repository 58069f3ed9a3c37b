package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/trainyard/trainyard/internal/kube"
)

func TestServeMaxStreamsFlag(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		var f = newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		fl := f.Lookup("max-streams-per-caller")
		require.NotNil(t, fl, cmd)
		require.Equal(t, "32", fl.DefValue)
		require.Contains(t, fl.Usage, "TRAINYARD_MAX_STREAMS_PER_CALLER")
	}
}

func TestServeConnectionFlags(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		f := newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		for name, def := range map[string]string{"handshake-timeout": "10s", "max-connections": "4096", "max-stream-lifetime": "30m0s"} {
			fl := f.Lookup(name)
			require.NotNil(t, fl, "%s --%s", cmd, name)
			require.Equal(t, def, fl.DefValue)
		}
	}
}

func TestAPIKubeDeleteSecretSaysWhetherThereWasOne(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ty-a", Name: "orphan"}})
	k := apiKube{kube.APIClient{Client: client}}

	found, err := k.DeleteSecret(ctx, "ty-a", "orphan")
	require.NoError(t, err)
	require.True(t, found)
	_, err = client.CoreV1().Secrets("ty-a").Get(ctx, "orphan", metav1.GetOptions{})
	require.Error(t, err, "deleted")

	found, err = k.DeleteSecret(ctx, "ty-a", "orphan")
	require.NoError(t, err)
	require.False(t, found)
}
