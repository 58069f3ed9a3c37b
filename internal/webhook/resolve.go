package webhook

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
)

// Resolver is what Policy resolves host names with: *net.Resolver, or a
// HostsFile in tests.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// HostsFile resolves names from a file in /etc/hosts form, read at every
// lookup (so a test can change what a name resolves to), and names it
// does not list with the system's resolver. The server's
// --webhook-hosts-file sets it: for tests and for installations that pin
// receivers' addresses.
type HostsFile string

func (f HostsFile) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if file, err := os.Open(string(f)); err == nil {
		defer file.Close()
		var out []netip.Addr
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			a, err := netip.ParseAddr(fields[0])
			if err != nil {
				continue
			}
			for _, name := range fields[1:] {
				if strings.EqualFold(name, host) {
					out = append(out, a.Unmap())
				}
			}
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}
