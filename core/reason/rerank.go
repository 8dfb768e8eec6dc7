package reason

// Codes the second-stage reranker refuses with. The strings are the
// reference reranking lab's own ValueError messages, in the order its
// rerank(), apply_order() and accept_scores() check them.
const (
	InvalidK                       Code = "invalid_k"
	InvalidCandidates              Code = "invalid_candidates"
	UnknownCandidate               Code = "unknown_candidate"
	DuplicateCandidate             Code = "duplicate_candidate"
	CandidatePayloadMismatch       Code = "candidate_payload_mismatch"
	InvalidCandidateRank           Code = "invalid_candidate_rank"
	InvalidCandidateScore          Code = "invalid_candidate_score"
	InvalidRankingSchema           Code = "invalid_ranking_schema"
	RankingNotCandidatePermutation Code = "ranking_not_candidate_permutation"
	InvalidCrossEncoderScores      Code = "invalid_cross_encoder_scores"
	// UnrecordedQuery refuses a retrieval query the preserved vector
	// recording has no scores for: the replay is an allowlist, not an
	// embedding model.
	UnrecordedQuery Code = "unrecorded_query"
	// NoSupportedTarget marks a ranking outcome with no target source; such
	// a case stays outside the answerable denominator.
	NoSupportedTarget Code = "no_supported_target"
	// BudgetExceeded is ours: a live request whose reserved estimate would
	// take the spending ledger past its budget is not sent.
	BudgetExceeded Code = "budget_exceeded"
)
