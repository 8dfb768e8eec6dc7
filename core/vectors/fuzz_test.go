package vectors_test

import (
	"testing"

	"github.com/ragagentlab/ragagent/core/vectors"
)

// FuzzParse holds the vectors file's reader to its contract on any bytes:
// an error or a set that encodes back to a file parsing to the same set.
func FuzzParse(f *testing.F) {
	s, err := vectors.New(header(2), [][]float32{{1, 0}, {0.6, 0.8}})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := s.Encode()
	f.Add(good)
	f.Add([]byte(vectors.Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := vectors.Parse(b)
		if err != nil {
			return
		}
		again, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := vectors.Parse(again)
		if err != nil {
			t.Fatalf("a parsed set's encoding does not parse: %v", err)
		}
		if s2.Len() != s.Len() || s2.Header.Model.ID != s.Header.Model.ID {
			t.Fatal("the round trip changed the set")
		}
	})
}
