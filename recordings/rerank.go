package recordings

import _ "embed"

// RerankGemini is rerank-gemini.json: the reference lab's Gemini listwise
// proposals for the four development cases as a ragagent-recording/1 file
// (one trial per case), rebuilt from the published record by the suite's
// published.Gemini (internal/published) and replayed with exact-request matching.
//
//go:embed rerank-gemini.json
var RerankGemini []byte

// RerankCrossEncoder is rerank-cross-encoder.json: the published
// cross-encoder logits for the 4 original and 12 expanded cases as a
// ragagent-recording/1 file, in the reference's call order.
//
//go:embed rerank-cross-encoder.json
var RerankCrossEncoder []byte
