//go:build js && wasm

package jsbridge

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// SHA256 hashes with the platform's SubtleCrypto
// (crypto.subtle.digest, native code in the browser and in node), which
// checks a 15 MB pack file in tens of milliseconds where Go's portable
// sha256 compiled to WebAssembly takes over a second. Where there is no
// SubtleCrypto (an insecure page), Go's own is used. It is the engine's
// Options.SHA256: the engine still compares the sum with the manifest.
func SHA256(b []byte) (string, error) {
	subtle := Field(js.Global().Get("crypto"), "subtle")
	if !IsFunc(Field(subtle, "digest")) {
		return corpus.SHA256(string(b)), nil
	}
	data := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(data, b)
	digest := subtle.Get("digest").Call("bind", subtle)
	v, err := Await(context.Background(), digest, "SHA-256", data)
	if err != nil {
		return "", fmt.Errorf("SubtleCrypto could not hash the file: %w", err)
	}
	if !v.InstanceOf(js.Global().Get("ArrayBuffer")) {
		return "", errors.New("SubtleCrypto gave no ArrayBuffer")
	}
	sum := make([]byte, 32)
	if js.CopyBytesToGo(sum, js.Global().Get("Uint8Array").New(v)) != 32 {
		return "", errors.New("SubtleCrypto gave a digest that is not 32 bytes")
	}
	return hex.EncodeToString(sum), nil
}
