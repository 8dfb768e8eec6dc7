package reason

// Codes that say why a fixture check has its value (evaluate.Checks). They
// sit beside the published booleans and outcome, never replacing them, so
// a reader sees which target was read or not, which pattern matched or
// failed, and when an abstention was expected.
const (
	// Retrieval: were the case's target sources read?
	TargetsRead    Code = "targets_read"
	TargetsNotRead Code = "targets_not_read"
	NoTargets      Code = "no_targets"

	// Answer: for a case with targets, the first unmet condition in the
	// grader's order (answered, every target cited, every required pattern
	// matched, no forbidden pattern matched); for a case without, whether
	// the model stopped explicitly.
	AnswerMet          Code = "answer_met"
	NotAnswered        Code = "not_answered"
	TargetNotCited     Code = "target_not_cited"
	PatternMissing     Code = "pattern_missing"
	ForbiddenMatched   Code = "forbidden_matched"
	Abstained          Code = "abstained"
	AbstentionExpected Code = "abstention_expected"

	// Outcome: how the answer check and the run's status make pass, fail
	// or incomplete.
	OutcomePass       Code = "answer_check_met"
	OutcomeIncomplete Code = "ended_incomplete"
	OutcomeFailedRun  Code = "run_failed"
	OutcomeWrong      Code = "answer_check_not_met"
)
