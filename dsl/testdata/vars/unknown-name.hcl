election_timeout = "2s"
heartbeat        = "100ms"
