package api_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/api"
)

// The document loads as OpenAPI 3.1 and validates (its schemas are JSON
// Schema 2020-12, checked as such).
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	require.NoError(t, err)
	assert.True(t, doc.IsOpenAPI31OrLater())
	require.NoError(t, doc.Validate(context.Background(), openapi3.IsOpenAPI31OrLater()))
	for _, path := range []string{"/v1/runs", "/v1/runs/{id}", "/v1/runs/{id}/events", "/v1/runs/{id}/cancel", "/v1/runs/{id}/recording", "/healthz", "/openapi.json"} {
		assert.NotNil(t, doc.Paths.Find(path), path)
	}
}
