module github.com/ragagentlab/ragagent

go 1.26.0

require (
	github.com/getkin/kin-openapi v0.153.0
	github.com/ncruces/go-sqlite3 v0.37.0
	github.com/stretchr/testify v1.12.1
	github.com/syumai/workers v0.33.0
	golang.org/x/net v0.62.0
)

require (
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/ncruces/go-sqlite3-wasm/v6 v6.5.35401 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
