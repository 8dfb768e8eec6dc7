// Package api holds the server edition's contract: the OpenAPI 3.1
// document the server serves at /openapi.json and its tests validate
// every request and response against.
package api

import _ "embed"

// OpenAPI is the document, as served.
//
//go:embed openapi.json
var OpenAPI []byte
