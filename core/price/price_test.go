package price

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCost(t *testing.T) {
	r := Rate{InputPerMTok: 0.5, OutputPerMTok: 3}
	assert.InDelta(t, 0.0005+0.003, r.Cost(1000, 1000), 1e-12)
	assert.Zero(t, r.Cost(0, 0))
}

func TestOverride(t *testing.T) {
	for _, c := range []struct {
		spec  string
		model string
		in    float64
		err   bool
	}{
		{"", "gemini-3.8-flash", 0.5, false},
		{"gemini-3.8-flash=1/2", "gemini-3.8-flash", 1, false},
		{"new-model=0.1/0.2, gemini-3.8-flash=2/4", "new-model", 0.1, false},
		{"gemini-3.8-flash", "", 0, true},
		{"gemini-3.8-flash=1", "", 0, true},
		{"gemini-3.8-flash=-1/2", "", 0, true},
		{"=1/2", "", 0, true},
		{"m=NaN/1", "", 0, true},
		{"m=Inf/1", "", 0, true},
		{"m=1/+Inf", "", 0, true},
		{"m=1/2,m=3/4", "", 0, true}, // a model priced twice is refused, never the last price
	} {
		t.Run(c.spec, func(t *testing.T) {
			table, err := Defaults().Override(c.spec)
			if c.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			r, ok := table.Rate(c.model)
			require.True(t, ok)
			assert.Equal(t, c.in, r.InputPerMTok)
		})
	}
	// the defaults are untouched by an override
	r, _ := Defaults().Rate("gemini-3.8-flash")
	assert.Equal(t, 0.5, r.InputPerMTok)
}
