package tenant

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNamespaceName(t *testing.T) {
	require.Equal(t, "ty-vision", NamespaceName(DefaultNamespacePrefix, "vision"))
	require.Equal(t, "trainyard-vision", NamespaceName("trainyard-", "vision"))
}
