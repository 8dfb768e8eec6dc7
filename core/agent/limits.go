package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Limits are the run's allowances. Every field is a whole number within its
// cap; a run with any other value is refused before it starts.
type Limits struct {
	ModelCalls  int `json:"model_calls"`
	Searches    int `json:"searches"`
	Reads       int `json:"reads"`
	SourceBytes int `json:"source_bytes"`
	Seconds     int `json:"seconds"`
}

// DefaultLimits are the reference lab's defaults.
func DefaultLimits() Limits {
	return Limits{ModelCalls: 9, Searches: 3, Reads: 4, SourceBytes: 4096, Seconds: 180}
}

// LimitField describes one limit: its JSON name, its cap and where it lives.
type LimitField struct {
	Name string
	Max  int
	ptr  func(*Limits) *int
}

// LimitFields lists the limits in their published order with their caps.
func LimitFields() []LimitField {
	return []LimitField{
		{"model_calls", 12, func(l *Limits) *int { return &l.ModelCalls }},
		{"searches", 4, func(l *Limits) *int { return &l.Searches }},
		{"reads", 6, func(l *Limits) *int { return &l.Reads }},
		{"source_bytes", 8192, func(l *Limits) *int { return &l.SourceBytes }},
		{"seconds", 300, func(l *Limits) *int { return &l.Seconds }},
	}
}

// Validate refuses a limit outside 1..cap with invalid_limits.
func (l Limits) Validate() error {
	for _, f := range LimitFields() {
		if v := *f.ptr(&l); v < 1 || v > f.Max {
			return reason.New(reason.InvalidLimits, "%s must be a whole number from 1 to %d, got %d", f.Name, f.Max, v)
		}
	}
	return nil
}

// LimitsFromJSON reads limits from a decoded JSON value as Limits(**value)
// would: null or absent means the defaults, a missing key keeps its default,
// and a non-integer (1.0 and true included), out of range or unknown key is
// invalid_limits.
func LimitsFromJSON(v any) (Limits, error) {
	l := DefaultLimits()
	if v == nil {
		return l, nil
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return l, reason.New(reason.InvalidLimits, "limits must be an object or null")
	}
	byName := map[string]LimitField{}
	for _, f := range LimitFields() {
		byName[f.Name] = f
	}
	for _, k := range o.Keys() {
		f, known := byName[k]
		if !known {
			return l, reason.New(reason.InvalidLimits, "unknown limit %q", k)
		}
		raw, _ := o.Get(k)
		value, isInt := pyjson.IntOf(raw)
		if !isInt {
			return l, reason.New(reason.InvalidLimits, "%s must be a whole number, got %s", k, pyjson.Dumps(raw, pyjson.Options{}))
		}
		*f.ptr(&l) = value
	}
	return l, l.Validate()
}

// ParseLimits reads "model_calls=5,searches=2" over the defaults, for
// command lines and forms. A limit named twice is refused rather than
// silently taking the last value.
func ParseLimits(s string) (Limits, error) {
	l := DefaultLimits()
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	byName := map[string]LimitField{}
	for _, f := range LimitFields() {
		byName[f.Name] = f
	}
	given := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		f, known := byName[strings.TrimSpace(name)]
		if !ok || !known {
			return l, reason.New(reason.InvalidLimits, "%q is not name=value with a name among model_calls, searches, reads, source_bytes, seconds", part)
		}
		if given[f.Name] {
			return l, reason.New(reason.InvalidLimits, "%s is given twice; give each limit once", f.Name)
		}
		given[f.Name] = true
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return l, reason.New(reason.InvalidLimits, "%s=%q is not a whole number", f.Name, value)
		}
		*f.ptr(&l) = n
	}
	return l, l.Validate()
}

// String is the k=v form ParseLimits reads.
func (l Limits) String() string {
	parts := make([]string, 0, 5)
	for _, f := range LimitFields() {
		parts = append(parts, fmt.Sprintf("%s=%d", f.Name, *f.ptr(&l)))
	}
	return strings.Join(parts, ",")
}
