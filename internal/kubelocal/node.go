package kubelocal

import "encoding/json"

// nodeReady reads a Node object's Ready condition.
func nodeReady(body []byte) bool {
	var n struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	if json.Unmarshal(body, &n) != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}
