package embedproc

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragagentlab/ragagent/core/rerank"
)

// Pinned are the files a model folder's manifest pins besides the weights:
// the ones transformers.js reads (required), then a sentence-transformers
// repository's own description of its pooling and length (when present:
// lab/embed.mjs honours them).
var (
	requiredFiles = []string{"config.json", "tokenizer.json", "tokenizer_config.json"}
	optionalFiles = []string{"special_tokens_map.json", "vocab.txt", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"}
)

// Pin makes a model folder's manifest (rerank.ModelFormat) from the files
// it holds now: each one's sha256 and size, the weights at weights (an
// .onnx path inside the folder). It pins what is on disk (trust on first
// use): compare the sums with the ones the model's host lists before
// relying on them. The manifest is checked as every reader checks it.
func Pin(dir, id, revision, license, description, weights string) ([]byte, error) {
	file := func(rel string) (rerank.ModelFile, error) {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return rerank.ModelFile{}, err
		}
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		return rerank.ModelFile{Path: rel, SHA256: &hexSum, Bytes: int64(len(data))}, nil
	}
	m := rerank.ModelManifest{Format: rerank.ModelFormat, Model: id, Revision: revision, License: license, Description: description}
	for _, rel := range requiredFiles {
		f, err := file(rel)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (transformers.js reads it)", dir, err)
		}
		m.Files = append(m.Files, f)
	}
	for _, rel := range optionalFiles {
		f, err := file(rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, f)
	}
	if filepath.Ext(weights) != ".onnx" {
		return nil, fmt.Errorf("the weights %s are not an .onnx file (transformers.js runs the ONNX export, e.g. onnx/model.onnx)", weights)
	}
	w, err := file(weights)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	m.Weights = []rerank.ModelWeights{{ID: "fp32", Label: "full precision (fp32)", ModelFile: w}}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := rerank.ParseModelManifest(data); err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
