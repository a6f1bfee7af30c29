package base

import "testing"

func TestHumanBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {1023, "1023B"}, {1024, "1.0KiB"}, {1536, "1.5KiB"}, {3 << 20, "3.0MiB"}, {5 << 30, "5.0GiB"}} {
		if got := HumanBytes(c.n); got != c.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
