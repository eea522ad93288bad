package fakecri

import (
	"fmt"
	"net/netip"
	"sync"
)

// ipPool hands out the addresses of an IPv4 prefix, skipping the network
// address, the first host address (a bridge's gateway) and the broadcast
// address, next after the last one given, so that an address just released
// is not reused at once.
type ipPool struct {
	prefix netip.Prefix
	mu     sync.Mutex
	// used holds the addresses handed out; last the last one. Guarded by
	// mu.
	used map[netip.Addr]bool
	last netip.Addr
}

func newIPPool(prefix netip.Prefix) *ipPool {
	return &ipPool{prefix: prefix, used: map[netip.Addr]bool{}, last: prefix.Addr().Next()}
}

// size is how many addresses the pool hands out.
func (p *ipPool) size() int { return 1<<(32-p.prefix.Bits()) - 3 }

// get returns a free address, or an error when every one is in use.
func (p *ipPool) get() (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := p.prefix.Addr().Next().Next()
	a := p.last
	for range p.size() {
		a = a.Next()
		if !p.usable(a) {
			a = first
		}
		if !p.used[a] {
			p.used[a] = true
			p.last = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address in %v (%d in use)", p.prefix, len(p.used))
}

// usable reports whether a is a host address of the prefix other than the
// gateway.
func (p *ipPool) usable(a netip.Addr) bool {
	if !p.prefix.Contains(a) || a == p.prefix.Addr() || a == p.prefix.Addr().Next() {
		return false
	}
	return p.prefix.Contains(a.Next()) // not the broadcast address
}

// put releases a; releasing an address not handed out does nothing.
func (p *ipPool) put(a netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, a)
}
