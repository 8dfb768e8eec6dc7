package reason

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorsCarryTheirCodeThroughWrapping(t *testing.T) {
	err := fmt.Errorf("run: %w", New(DuplicateQuery, "%q repeats", "a b"))
	code, ok := Of(err)
	assert.True(t, ok)
	assert.Equal(t, DuplicateQuery, code)
	assert.Equal(t, `"a b" repeats`, DetailOf(err))
	assert.Equal(t, `run: duplicate_query: "a b" repeats`, err.Error())
	_, ok = Of(errors.New("plain"))
	assert.False(t, ok)
	assert.Equal(t, "changed_read", New(ChangedRead, "").Error())
}

func TestTransportCodes(t *testing.T) {
	c := Transport("HTTPError")
	assert.Equal(t, Code("model_transport_failed:HTTPError"), c)
	kind, ok := c.TransportKind()
	assert.True(t, ok)
	assert.Equal(t, "HTTPError", kind)
	_, ok = ModelStopped.TransportKind()
	assert.False(t, ok)
}
