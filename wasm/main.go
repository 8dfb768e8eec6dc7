//go:build js && wasm

// Command wasm is the core compiled for the browser (and node): it exports
// one API object to JS and stays alive until the API's exit() is called.
// It, worker/ (the server edition on Cloudflare Workers) and the bridge
// they share (internal/jsbridge) are the only packages that import
// syscall/js (internal/layout holds the rule). Each export is one row of
// exports (api.go): its name, its typed request decoded from the JS
// argument as JSON, and the engine call.
//
// The API object, set as globalThis.ragagent (and passed to
// globalThis.ragagentReady(api) when that is a function):
//
//	version                      "ragagent-wasm/1"
//	load({priceHint}?)           Promise<{passages, cases, versions, limits, modes, policies, open_ms}>
//	                             validates the corpus and builds the FTS5 index (once); priceHint
//	                             replaces the page's "change it in the price fields" in each price's source
//	corpus()                     Promise<passages with bytes> (the seed's)
//	packs()                      Promise<[{manifest, open}]>: the corpus packs, the seed first
//	packInfo(id)                 Promise<{manifest, search_k, cases, pages, text_bytes, passage_bytes, open_ms}>
//	loadPack(manifest, passages) Promise<packInfo>: a pack from its manifest (text or bytes) and its
//	                             uncompressed passages file (Uint8Array), checked against the manifest
//	                             (size and sha256 with the platform's SubtleCrypto; an image's passages
//	                             when first used) and kept under its id; the same bytes again
//	                             cost nothing
//	buildPack([{path, bytes}], onDocument?)
//	                             Promise<{manifest, passages, info, documents, skipped: [{path, reason}]}>:
//	                             a person's files built into the pack "documents" and loaded (replacing
//	                             it); manifest and passages are the JSON files to keep and load again
//	removePack(id)               Promise<undefined>: forgets a pack loaded from bytes
//	passage({corpus, source_id}) Promise<{corpus, source_id, version, url, title, text, text_sha256, bytes}>
//	packCases(id)                Promise<[case]>: a pack's authored cases
//	search({corpus, query, version, k})
//	                             Promise<{corpus, hits: [{source_id, rank, version, bytes, text_sha256, score,
//	                             url, title, snippet}], terms, elapsed_ms}>; the snippet marks terms ⟦like this⟧
//	replay({recording?, caseId?, scores?}, onTrial?)
//	                             Promise<{trials, summary, exchanges, exchanges_used, elapsed_ms, ...}>;
//	                             recording is ragagent-recording/1 text (default: the bundled comparison);
//	                             onTrial(done, total, id) reports progress; a malformed file rejects with
//	                             an Error named RecordingError
//	policies()                   Promise<[{name, label, live}]>
//	plan(spec)                   Promise<{model, endpoint, allowance, caps, limits, worst_case_requests, ...}>
//	run(spec, {onStep, post})    {id, result: Promise<trial report>}; spec is {corpus, question, version,
//	                             mode, limits, policy, hasKey, endpoint}; a refused task rejects with an Error
//	                             named RunRefused whose code is the reason
//	runOutput(spec, {onStep, post})
//	                             as run, its result what `ragagent run --json` prints ({policy, recording,
//	                             result, tokens, note}: engine.RunOutput); a refused task rejects (RunRefused)
//	eval({corpus, policy, recording?, config?, cases?}, onTrial?)
//	                             Promise<what ragagent eval --json prints>: the pack's cases on both paths,
//	                             policy scripted (default) or replay (recording: text made over the pack)
//	evalReport({corpus, policy, recording?, config?, cases?}, onTrial?)
//	                             a job {id, result: Promise<{json, trials}>}: eval's result as the bytes
//	                             ragagent eval --json prints, and its graded trials (with candidate scores)
//	                             for their traces; cancel(id) stops it between trials (reason cancelled)
//	evalPlan({corpus, config?, cases?, endpoint?, hasKey}, store)
//	                             Promise<the batch plan of ragagent eval --policy gemini, with ledger,
//	                             allowance and refusal>: the worst case checked against the ledger
//	evalLive({corpus, config?, cases?, endpoint?, hasKey}, {post, store, save, onTrial})
//	                             {id, result: Promise<what ragagent eval --json prints, with ledger,
//	                             actual_api_requests, planned_trials, cancelled>}: refused whole when the
//	                             plan has a refusal; save(text) gets the recording after every attempt
//	cancel(id)                   stops a run (it ends incomplete, reason cancelled); true if it was running
//	rerank({gemini?, crossEncoder?})
//	                             Promise<{coverage, gemini, cross_encoder, sources, elapsed_ms, ...}>: the
//	                             reranking lab's three runs replayed (records in the published shapes);
//	                             gemini/crossEncoder replace the bundled recordings with loaded text
//	rerankPlan(spec, store)      Promise<{model, endpoint, rate, prices, calls, total_usd, ledger, allowance,
//	                             caps, refusal}>: what a live listwise rerank would reserve and send
//	rerankLive(spec, {post, store, onCase})
//	                             {id, result: Promise<{gemini, ledger, exchanges, ...}>}; spec is
//	                             {price?, endpoint?, hasKey}; refused whole (RunRefused, code) before
//	                             anything is reserved or sent when the plan has a refusal
//	retrievalConfigs()           Promise<[spec]>: the built-in retrieval configurations, in --list order
//	retrieval({corpus, cases, configs, k}, {onProgress})
//	                             {id, result: Promise<text>}: `ragagent retrieval --json`'s bytes;
//	                             onProgress(done, total, config) per question ranked
//	tune({corpus, cases, folds}, {onProgress})
//	                             {id, result: Promise<text>}: `ragagent tune --json`'s bytes;
//	                             onProgress(done, total, config) per question under each configuration
//	applyDefault({corpus, config})
//	                             Promise<info>: a built-in's name or a spec ({name} or {spec}) the
//	                             open pack's default for the session; seed packs refuse
//	compareExperiments({a, b, pairs: [{a, b}]})
//	                             Promise<{k, cases, pairs: [{a, b, metrics: [{metric, a_value, b_value,
//	                             difference, ci95, p_value}]}]}>: two kept retrieval results on the same
//	                             cases compared by configuration pair (engine.CompareExperiments)
//	specDigests([name | spec])   Promise<[sha256]>: each configuration's spec sha256 (retrieval.Spec.SHA256)
//	questionSet({corpus, text})  Promise<[case]>: a question set read as retrieval reads it (invalid_cases)
//	casesJSON(text)              Promise<string>: a question set (JSON or TSV) read as --cases reads it, as
//	                             ragagent-cases/1 JSON, no pack's defaults (engine.QuestionSetObject; the node server lab's)
//	rerankRecording()            Promise<{exchanges, text} | null>: the latest live rerank's recording
//	ledger(store)                Promise<{budget_usd, spent_usd, remaining_usd, entries}>
//	setBudget(usd, store)        Promise<ledger state>
//	recording()                  Promise<{trials, text}>: the session's recorded runs
//	exchanges({source, trial})   Promise<{source, trial, model, endpoint, config, exchanges}>: a recorded
//	                             trial's model exchanges (source bundled, loaded or session)
//	exportOTLP({source, trial?, corpus?, annotations?})
//	                             Promise<string>: the source's trials (or one) as OTLP/JSON; each
//	                             annotation ({trial?, author, verdict?, note?, passage_url?, passage_id?,
//	                             time}, otlp.Annotation) an event "ragagent.annotation" on its run span
//	crossEncoderPlan(manifest?)  Promise<plan>: a fresh cross-encoder scoring's plan (the published model,
//	                             or a test host's manifest text)
//	acceptCrossEncoder(payload)  Promise<run>: a fresh scoring's payload through the acceptance contract
//	exportRunOTLP({corpus, run, recording?, recorded_at, trial: {id, repeat}, annotations?})
//	                             Promise<OTLP/JSON text>: a run the page kept (run is its spec): a scripted
//	                             one made again, a live one replayed from its own recording (engine.ExportRun),
//	                             its annotations events on its run span as exportOTLP's
//	warm(rounds, round)          Promise<{rounds, elapsed_ms}>: repeats start-up on throwaway labs
//	                             (1 to 50 rounds a call) so the browser caches optimised code (engine.Warm)
//	exit()                       releases the API and ends the program
//
// post(endpoint, body, {signal, timeoutMs}) is the shell's fetch (see
// jsbridge.Fetch): the API key never crosses into this module.
//
// store is the spending ledger's storage in the shell, {load(), update(apply)}
// (see jsbridge.Store): only the ledger's text crosses.
package main

import "syscall/js"

func main() {
	e := newAdapter()
	api := e.object()
	js.Global().Set("ragagent", api)
	if ready := js.Global().Get("ragagentReady"); ready.Type() == js.TypeFunction {
		ready.Invoke(api)
	}
	<-e.exit
	js.Global().Delete("ragagent")
	e.release()
}
