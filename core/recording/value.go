package recording

import (
	"encoding/json"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// ResultValue is a result as a JSON value, for comparing with a published
// record field by field.
func ResultValue(r *agent.Result) (*pyjson.Object, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	v, err := pyjson.Decode(string(raw))
	if err != nil {
		return nil, err
	}
	return v.(*pyjson.Object), nil
}
