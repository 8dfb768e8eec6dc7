// Package jsonfile decodes the project's own data files strictly: a file
// with a misspelt key or a second value is a mistake to report, not
// something to half-read, because these files pin what the labs check.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Decode decodes exactly one JSON value from data into v, refusing unknown
// object keys and anything after the value.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the value")
	}
	return nil
}
