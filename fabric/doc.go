// Package fabric gives every node and every client region of a run a host
// of its own: a Linux network namespace with one address in 10.99.0.0/16
// and a TUN device as its only route to the others. The runner's process
// holds every TUN and forwards each packet between hosts through a
// userspace shaper (package shaper), which delays, drops, throttles or cuts
// it according to the link between the two hosts. The kernel of the
// machines this project runs on has no sch_netem, so the userspace path is
// the one that works everywhere; it carries TCP and UDP alike.
//
// Store processes start inside their host's namespace (Host.Command wraps
// them in `ip netns exec`), and clients dial from their region's namespace
// (Host.Dial opens its sockets there). Namespaces are named after the
// owning process's pid and the run id, so that a run killed with SIGKILL is
// found and removed by the next (Reap).
//
// Creating namespaces and TUN devices needs root (CAP_NET_ADMIN and
// CAP_SYS_ADMIN); Available says whether this process can.
package fabric
