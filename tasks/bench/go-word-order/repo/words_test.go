package words

import "testing"

func TestCountIgnoresCase(t *testing.T) {
	got := Count("Go go GO stop")
	if got["go"] != 3 || got["stop"] != 1 || len(got) != 2 {
		t.Fatalf("got %v", got)
	}
}

func TestFormatOneWord(t *testing.T) {
	if got := Format(map[string]int{"go": 2}); got != "go: 2\n" {
		t.Fatalf("got %q", got)
	}
}
