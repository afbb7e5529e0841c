package plan

// DefaultRegion is where nodes sit when a cluster has no placement.
const DefaultRegion = "local"
