//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/internal/jsbridge"
	"github.com/ragagentlab/ragagent/internal/server"
)

// r2Packs is server.PackStore over the R2 bucket bound as CORPORA,
// through worker.mjs's r2 helper (worker/r2.mjs holds the layout: the
// passages file first, the manifest last and only if the id is free).
//
// Why a helper of our own and not github.com/syumai/workers/cloudflare/r2:
// that package calls the binding from Go and awaits its promises itself,
// so in the front (one program serving every request of its isolate) the
// promises would be counted against no request and their settling turns
// would run as whichever request was current (worker.mjs's counted(),
// the cause of "Promise will never complete" there once); through the
// helper every R2 call is counted against the request that made it, as
// the D1 and run-object calls are. It also crosses each operation once
// (a listing's manifests fetched in parallel in JS) and a passages file
// as one Uint8Array copy, where the package streams bodies through a
// ReadableStream read from Go, and it adds no dependency.
type r2Packs struct{ bucket js.Value }

var _ server.PackStore = r2Packs{}

func (p r2Packs) call(ctx context.Context, op string, args ...any) (js.Value, error) {
	v, err := jsbridge.Await(ctx, jsContext.Get("r2"), append([]any{p.bucket, op}, args...)...)
	if err != nil {
		return js.Undefined(), fmt.Errorf("r2 %s: %w", op, err)
	}
	return v, nil
}

// keptOf reads a kept pack as r2.mjs gives it.
func keptOf(v js.Value) (server.KeptPack, error) {
	manifest, err := jsbridge.Bytes(v.Get("manifest"))
	if err != nil {
		return server.KeptPack{}, fmt.Errorf("r2: a manifest: %w", err)
	}
	return server.KeptPack{Tenant: v.Get("tenant").String(), ID: v.Get("id").String(), Manifest: manifest,
		File: v.Get("file").String(), Bytes: int64(v.Get("bytes").Float()), Where: v.Get("where").String()}, nil
}

func (p r2Packs) Kept(ctx context.Context, tenant string) ([]server.KeptPack, error) {
	v, err := p.call(ctx, "kept", tenant)
	if err != nil {
		return nil, err
	}
	out := make([]server.KeptPack, 0, v.Length())
	for i := range v.Length() {
		k, err := keptOf(v.Index(i))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func (p r2Packs) Find(ctx context.Context, id string) (server.KeptPack, bool, error) {
	v, err := p.call(ctx, "find", id)
	if err != nil || v.IsNull() {
		return server.KeptPack{}, false, err
	}
	k, err := keptOf(v)
	return k, err == nil, err
}

func (p r2Packs) Put(ctx context.Context, k server.KeptPack, passagesFile []byte) error {
	pack := js.Global().Get("Object").New()
	pack.Set("id", k.ID)
	pack.Set("tenant", k.Tenant)
	pack.Set("file", k.File)
	pack.Set("bytes", k.Bytes)
	pack.Set("manifest", uint8Array(k.Manifest))
	v, err := p.call(ctx, "put", pack, uint8Array(passagesFile))
	if err != nil {
		return err
	}
	if v.Get("taken").Bool() {
		return server.ErrPackTaken
	}
	return nil
}

func (p r2Packs) Passages(ctx context.Context, k server.KeptPack) ([]byte, error) {
	v, err := p.call(ctx, "passages", k.Where)
	if err != nil {
		return nil, err
	}
	if v.IsNull() {
		return nil, errors.New("r2: the passages file is gone")
	}
	return jsbridge.Bytes(v)
}

func (p r2Packs) Delete(ctx context.Context, k server.KeptPack) error {
	_, err := p.call(ctx, "delete", k.ID, k.Where)
	return err
}

// r2Results is server.ResultStore over the same bucket (results/<id>,
// worker/r2.mjs): the experiments' results too long for D1's row.
type r2Results struct{ r2Packs }

var _ server.ResultStore = r2Results{}

func (r r2Results) PutResult(ctx context.Context, key string, data []byte) error {
	_, err := r.call(ctx, "putResult", key, uint8Array(data))
	return err
}

func (r r2Results) DeleteResult(ctx context.Context, key string) error {
	_, err := r.call(ctx, "deleteResult", key)
	return err
}

func (r r2Results) Result(ctx context.Context, key string) ([]byte, error) {
	v, err := r.call(ctx, "result", key)
	if err != nil {
		return nil, err
	}
	if v.IsNull() {
		return nil, fmt.Errorf("r2: the result %s is gone", key)
	}
	return jsbridge.Bytes(v)
}

func uint8Array(b []byte) js.Value {
	a := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(a, b)
	return a
}
