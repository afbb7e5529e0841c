heartbeat = "300ms"
nodes     = 5
