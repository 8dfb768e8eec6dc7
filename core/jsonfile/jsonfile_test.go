package jsonfile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ragagentlab/ragagent/core/jsonfile"
)

func TestDecode(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	assert.NoError(t, jsonfile.Decode([]byte(` {"a": 1} `), &v))
	assert.Equal(t, 1, v.A)
	assert.ErrorContains(t, jsonfile.Decode([]byte(`{"b": 1}`), &v), "unknown field")
	assert.ErrorContains(t, jsonfile.Decode([]byte(`{"a": 1} {}`), &v), "unexpected data")
	assert.Error(t, jsonfile.Decode([]byte(`{"a": `), &v))
	assert.Error(t, jsonfile.Decode([]byte(``), &v))
}
