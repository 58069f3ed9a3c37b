package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrNotAllowed is the cause of every refusal of a destination.
var ErrNotAllowed = errors.New("destination not allowed")

// Policy says where deliveries may go. The zero Policy allows every
// public address and nothing else.
type Policy struct {
	// CIDRs are allowed even when private (--webhook-allow).
	CIDRs []netip.Prefix
	// Hosts are host names allowed (--webhook-allow); "*.example.com"
	// matches its subdomains. When CIDRs or Hosts are set, only they are
	// allowed; a listed host's addresses must still be public or in CIDRs.
	Hosts []string
	// AllowLoopback opens loopback addresses (tests and local demos).
	AllowLoopback bool
	// Resolver resolves host names; nil is the system's.
	Resolver Resolver
}

// ParsePolicy reads --webhook-allow entries: CIDRs, IP addresses, host names.
func ParsePolicy(entries []string, allowLoopback bool) (Policy, error) {
	p := Policy{AllowLoopback: allowLoopback}
	for _, e := range entries {
		e = strings.TrimSpace(strings.ToLower(e))
		if e == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(e); err == nil {
			p.CIDRs = append(p.CIDRs, pfx.Masked())
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			p.CIDRs = append(p.CIDRs, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		name := strings.TrimPrefix(e, "*.")
		if strings.ContainsAny(name, "/:*") || name == "" {
			return Policy{}, fmt.Errorf("webhook allow entry %q is neither a CIDR, an address nor a host name", e)
		}
		p.Hosts = append(p.Hosts, e)
	}
	return p, nil
}

func (p Policy) restricted() bool { return len(p.CIDRs) > 0 || len(p.Hosts) > 0 }

func (p Policy) hostListed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range p.Hosts {
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// CheckAddr says whether host (as the URL names it) may be reached at addr.
func (p Policy) CheckAddr(host string, addr netip.Addr) error {
	addr = addr.Unmap()
	for _, c := range p.CIDRs {
		if c.Contains(addr) {
			return nil
		}
	}
	if addr.IsLoopback() && p.AllowLoopback {
		return nil
	}
	if special(addr) {
		return fmt.Errorf("%w: %s is a loopback, private, link-local or otherwise internal address", ErrNotAllowed, addr)
	}
	if p.restricted() && !p.hostListed(host) {
		return fmt.Errorf("%w: %s (%s) is not in the server's --webhook-allow list", ErrNotAllowed, host, addr)
	}
	return nil
}

// special is an address no webhook reaches by default.
func special(a netip.Addr) bool {
	return !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() ||
		cgnat.Contains(a) || benchmarking.Contains(a) || (a.Is4() && a.As4()[0] == 0) || (a.Is4() && a.As4()[0] >= 240)
}

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")
)

// Resolve returns host's addresses (host may be an address literal).
func (p Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolving %s: no addresses", host)
	}
	return addrs, nil
}

// CheckURL resolves the URL's host and checks every address it has: the
// check when a webhook is created or changed.
func (p Policy) CheckURL(ctx context.Context, rawURL string) error {
	u, err := ParseURL(rawURL)
	if err != nil {
		return err
	}
	addrs, err := p.Resolve(ctx, u.Hostname())
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := p.CheckAddr(u.Hostname(), a); err != nil {
			return err
		}
	}
	return nil
}

// DialContext resolves the host itself, keeps the allowed addresses and
// dials them in turn; the dialer's Control checks the very address each
// socket connects to, so nothing in between (a second resolution, a
// proxy from the environment) can swap in another.
func (p Policy) DialContext(timeout time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		addrs, err := p.Resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		var firstErr error
		for _, a := range addrs {
			if err := p.CheckAddr(host, a); err != nil {
				firstErr = cmpErr(firstErr, err)
				continue
			}
			d := net.Dialer{Timeout: timeout, Control: func(_, addr string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(addr)
				if err != nil {
					return fmt.Errorf("%w: cannot parse %s", ErrNotAllowed, addr)
				}
				return p.CheckAddr(host, ap.Addr())
			}}
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			firstErr = cmpErr(firstErr, err)
		}
		return nil, firstErr
	}
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
