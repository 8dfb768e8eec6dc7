// Package apiclient is a Go client of the server edition generated from
// its contract, api/openapi.json, by oapi-codegen v2.8.2 (a go tool of
// this module: go.mod's tool directive pins it). It exists to prove the
// document is one a standard generator turns into a usable client (one
// method per operationId: CreateRun, GetRun, StreamRunEvents, CancelRun,
// ...); internal/server's TestGeneratedClientDrivesARun drives a run with
// it, and TestGeneratedClientIsUpToDate fails when the document changed
// and client.gen.go was not regenerated:
//
//	go generate ./internal/apiclient
//
// oapi-codegen v2.8.2 reads the OpenAPI 3.1 document as it is (type lists
// with null become pointers); no 3.0 copy is needed.
package apiclient

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.json
