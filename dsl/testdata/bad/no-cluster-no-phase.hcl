# expect: 1:1 No cluster | A scenario needs a cluster
# expect: 1:1 No phase | A scenario needs at least one phase
# An empty scenario: no cluster, no phase.
description = "nothing here"
