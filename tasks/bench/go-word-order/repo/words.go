// Package words counts words in text.
package words

import (
	"fmt"
	"strings"
)

// Count returns how often each word occurs in text; words are separated by white space and compared in
// lower case.
func Count(text string) map[string]int {
	counts := map[string]int{}
	for _, w := range strings.Fields(text) {
		counts[strings.ToLower(w)]++
	}
	return counts
}

// Format writes one "word: count" line per word, the words in alphabetical order.
func Format(counts map[string]int) string {
	var b strings.Builder
	for w, n := range counts {
		fmt.Fprintf(&b, "%s: %d\n", w, n)
	}
	return b.String()
}
