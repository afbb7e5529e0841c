# Three contenders take turns holding one lock with each store's standard
# recipe: etcd's concurrency.Mutex on a lease, ZooKeeper's lock recipe
# (sequential ephemeral nodes), Consul's session lock (api.Lock). Then the
# holder is paused past its TTL, as a long GC pause or a frozen VM would:
# it sends and hears nothing and still believes it holds the lock. The
# store gives the lock to the next contender, and when the paused one
# wakes, two processes have believed they held the lock at once. None of
# these recipes can prevent that without a fencing token checked by the
# resource the lock guards; the mutual-exclusion checker shows it.
#
#   scenario run scenarios/lock-pause.hcl
#   scenario run scenarios/lock-pause.hcl --var store=zookeeper   # one store

description = "Lock recipes on etcd, ZooKeeper and Consul: handover, takeover after a paused holder, and the overlap no recipe prevents"

variable "store" {
  type    = string
  default = "etcd"
}

sweep {
  matrix = { store = ["etcd", "zookeeper", "consul"] }
}

cluster "main" {
  store = var.store
  nodes = 3
}

# Consul's sessions take 10 s at least; the others get the same TTL so that
# the three are compared alike.
workload "locks" {
  timeout = "5s"
  lock {
    contenders = 3
    ttl        = "10s"
    hold       = "500ms"
  }
}

phase "turns" {
  duration = "15s"
  load "locks" {}
}

# The pause outlasts every store's takeover: etcd and ZooKeeper give the
# lock away about a TTL after the holder's last heartbeat; Consul waits
# twice the TTL (its grace), then its lock-delay of 15 s during which nobody
# may take the lock: about 35 s. A pause shorter than that is one Consul's
# lock-delay absorbs.
phase "paused-holder" {
  duration = "55s"
  load "locks" {}

  fault "pause" {
    workload = "locks"
    at       = "2s"
    duration = "45s"
  }
}

check "handover is quick" {
  condition = phase.turns.handover.p99 < seconds(1)
}

check "a paused holder is replaced" {
  condition = phase.paused-holder.takeover.count == 1 && phase.paused-holder.takeover.max < seconds(45)
  message   = "etcd and ZooKeeper should take about the TTL, Consul twice the TTL and its 15 s lock-delay."
}

check "the pause shows what the recipe cannot prevent" {
  condition = run.workload.locks.overlaps >= 1
  message   = "A holder paused past its TTL should have overlapped the next one: without fencing, no lock recipe prevents it."
}
