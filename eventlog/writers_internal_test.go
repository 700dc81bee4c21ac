package eventlog

import "testing"

func TestServerTooOld(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		old           bool
	}{
		{"2.10 ignores the subject header", "2.10.22", true},
		{"2.11 has it", "2.11.0", false},
		{"this machine's", "2.15.2", false},
		{"a 3.x", "3.0.0", false},
		{"a 1.x", "1.4.1", true},
		{"unparseable", "dev", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := serverTooOld(tc.version); got != tc.old {
				t.Errorf("serverTooOld(%q) = %v, want %v", tc.version, got, tc.old)
			}
		})
	}
}
