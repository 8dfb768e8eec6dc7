package gemini

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolveEndpoint(t *testing.T) {
	path := "/v1beta/models/" + Model + ":generateContent"
	accepted := []struct{ in, want string }{
		{"", Endpoint},
		{Endpoint, Endpoint},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080" + path},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080" + path},
		{"http://127.9.8.7:1/custom:generateContent", "http://127.9.8.7:1/custom:generateContent"},
		{"https://localhost:8443", "https://localhost:8443" + path},
		{"http://LOCALHOST:1", "http://LOCALHOST:1" + path},
		{"http://[::1]:9999", "http://[::1]:9999" + path},
		{"http://[::ffff:127.0.0.1]:9999/x", "http://[::ffff:127.0.0.1]:9999/x"},
	}
	for _, row := range accepted {
		got, err := ResolveEndpoint(row.in)
		require.NoError(t, err, row.in)
		assert.Equal(t, row.want, got, row.in)
	}
	refused := []string{
		"https://generativelanguage.googleapis.com/v1beta/models/other:generateContent",
		"http://example.com:8080",
		"http://10.0.0.1:8080",
		"http://[::2]:80",
		"http://127.1:8080",
		"http://2130706433:8080",
		"http://localhost.:8080",
		"http://localhost.example.com",
		"ftp://127.0.0.1/x",
		"127.0.0.1:8080",
		"http://user:secret@127.0.0.1:8080",
		"http://127.0.0.1:8080/x?key=abc",
		"http://127.0.0.1:8080/x#frag",
		"http://127.0.0.1:8080/x?",
		"//127.0.0.1:8080",
		"http://",
		"http://127.0.0.1:9/%zz?key=AIzaSECRETabc",
	}
	for _, in := range refused {
		_, err := ResolveEndpoint(in)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), "loopback", in)
			assert.NotContains(t, err.Error(), "\n")
			assert.NotContains(t, err.Error(), "secret")
			assert.NotContains(t, err.Error(), "abc")
			assert.NotContains(t, err.Error(), "SECRET")
		}
	}
}
