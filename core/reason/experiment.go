package reason

// Codes for the inputs of retrieval experiments (DESIGN, third phase): a
// question set, a retrieval configuration, and a replay under a
// configuration other than its recording's. The node API rejects with the
// same codes as its errors' code.
const (
	// InvalidCases is a malformed question set; the detail names the case
	// and the field.
	InvalidCases Code = "invalid_cases"
	// UnknownConfig is a configuration name that is not a built-in (or one
	// that cannot run here, such as a model-backed stage without its model).
	UnknownConfig Code = "unknown_config"
	// InvalidConfig is a configuration file or spec that does not parse or
	// sets a value out of range.
	InvalidConfig Code = "invalid_config"
	// ConfigMismatch is a replay asked to run under another configuration
	// than the one its recording names.
	ConfigMismatch Code = "config_mismatch"
)

// InvalidAnnotation is a person's annotation of a trial (the page's
// verdict, note and answering passage) that an export cannot carry: an
// unknown verdict, a time that is not RFC 3339, no author, or a trial the
// export does not hold. The detail names the field.
const InvalidAnnotation Code = "invalid_annotation"
