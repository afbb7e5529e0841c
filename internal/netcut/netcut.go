// Package netcut makes partitions with netfilter rules in a network
// namespace: the way a pod on a remote node is cut off, where the runner
// cannot put the network fabric between pods. It talks nftables over
// netlink, so it needs no iptables or nft binary in the store's image,
// only CAP_NET_ADMIN in the namespace.
//
// The rules are those of the fabric's kernel reference network
// (fabric/kernel.go): a dropped pair loses its packets; a rejected pair
// gets a TCP reset or an ICMP port-unreachable, and the answers of the far
// side's own rejection are let through, so that a cut both ways still
// rejects rather than drops.
package netcut

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Table is the nftables table the rules live in (family ip).
const Table = "scenario"

// Cut is one peer whose traffic is cut.
type Cut struct {
	Addr netip.Addr `json:"addr"`
	// Reject answers the peer's packets (TCP reset, ICMP unreachable)
	// instead of dropping them.
	Reject bool `json:"reject,omitempty"`
}

// Rules are every cut in force in one namespace.
type Rules struct {
	// In cuts what arrives from these sources.
	In []Cut `json:"in,omitempty"`
	// Out cuts what leaves for these destinations (peers that cannot cut
	// their own input, such as load workers).
	Out []Cut `json:"out,omitempty"`
}

// Empty reports whether r cuts nothing.
func (r Rules) Empty() bool { return len(r.In) == 0 && len(r.Out) == 0 }

// Apply replaces the cuts in force with r, in one netlink batch: no packet
// sees half of the old rules and half of the new. opts choose the
// namespace (nftables.WithNetNSFd); none means this process's.
func Apply(r Rules, opts ...nftables.ConnOption) error {
	for _, c := range append(append([]Cut(nil), r.In...), r.Out...) {
		if !c.Addr.Is4() {
			return fmt.Errorf("netcut: %s is not an IPv4 address (IPv6 peers are not supported)", c.Addr)
		}
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return fmt.Errorf("netcut: open netlink: %w", err)
	}
	t := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: Table})
	accept := nftables.ChainPolicyAccept
	// Just before the filter priority: ahead of whatever else filters
	// the namespace's traffic.
	prio := nftables.ChainPriorityRef(*nftables.ChainPriorityFilter - 1)
	in := conn.AddChain(&nftables.Chain{Name: "cut-in", Table: t, Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookInput, Priority: prio, Policy: &accept})
	out := conn.AddChain(&nftables.Chain{Name: "cut-out", Table: t, Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookOutput, Priority: prio, Policy: &accept})
	conn.FlushChain(in)
	conn.FlushChain(out)
	for _, c := range r.In {
		for _, exprs := range cutExprs(c, srcOffset) {
			conn.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: exprs})
		}
	}
	for _, c := range r.Out {
		for _, exprs := range cutExprs(c, dstOffset) {
			conn.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: exprs})
		}
	}
	if err := conn.Flush(); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("netcut: apply rules: %w (the container needs CAP_NET_ADMIN)", err)
		}
		return fmt.Errorf("netcut: apply rules: %w", err)
	}
	return nil
}

// Remove deletes the table and every cut in it; a namespace without it is
// left as it is.
func Remove(opts ...nftables.ConnOption) error {
	conn, err := nftables.New(opts...)
	if err != nil {
		return fmt.Errorf("netcut: open netlink: %w", err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("netcut: list tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == Table {
			conn.DelTable(t)
			if err := conn.Flush(); err != nil {
				return fmt.Errorf("netcut: delete table: %w", err)
			}
		}
	}
	return nil
}

// Offsets of the peer's address in the IPv4 header.
const (
	srcOffset = 12
	dstOffset = 16
)

const (
	protoICMP        = unix.IPPROTO_ICMP
	protoTCP         = unix.IPPROTO_TCP
	tcpFlagsOffset   = 13
	tcpRST           = 0x04
	icmpUnreachable  = 3
	icmpPortUnreach  = 3
	peerReg, tmpReg  = 1, 2
	ipv4AddrLen      = 4
	l4protoLen, bLen = 1, 1
)

// cutExprs are the rules that cut peer c, whose address sits at off in
// the IPv4 header.
func cutExprs(c Cut, off uint32) [][]expr.Any {
	peer := func() []expr.Any {
		return []expr.Any{
			&expr.Payload{DestRegister: peerReg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: ipv4AddrLen},
			&expr.Cmp{Op: expr.CmpOpEq, Register: peerReg, Data: c.Addr.AsSlice()},
		}
	}
	proto := func(p byte) []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: tmpReg},
			&expr.Cmp{Op: expr.CmpOpEq, Register: tmpReg, Data: []byte{p}},
		}
	}
	rule := func(parts ...[]expr.Any) []expr.Any {
		var out []expr.Any
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	if !c.Reject {
		return [][]expr.Any{rule(peer(), []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}})}
	}
	return [][]expr.Any{
		// The far side's answers to its own rejection pass.
		rule(proto(protoTCP), peer(), []expr.Any{
			&expr.Payload{DestRegister: tmpReg, Base: expr.PayloadBaseTransportHeader, Offset: tcpFlagsOffset, Len: bLen},
			&expr.Bitwise{SourceRegister: tmpReg, DestRegister: tmpReg, Len: bLen, Mask: []byte{tcpRST}, Xor: []byte{0}},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: tmpReg, Data: []byte{0}},
			&expr.Verdict{Kind: expr.VerdictAccept},
		}),
		rule(proto(protoICMP), peer(), []expr.Any{
			&expr.Payload{DestRegister: tmpReg, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: bLen},
			&expr.Cmp{Op: expr.CmpOpEq, Register: tmpReg, Data: []byte{icmpUnreachable}},
			&expr.Verdict{Kind: expr.VerdictAccept},
		}),
		rule(proto(protoTCP), peer(), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}}),
		rule(peer(), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: icmpPortUnreach}}),
	}
}
