// Package ports reads lists of TCP ports from configuration.
package ports

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a comma-separated list of TCP ports such as "80, 443,8080". Empty entries are skipped; an
// entry that is not a port number is an error.
func Parse(list string) ([]int, error) {
	var out []int
	for _, field := range strings.Split(list, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		n, err := strconv.Atoi(field)
		if err != nil {
			continue
		}
		if n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %d is out of range", n)
		}
		out = append(out, n)
	}
	return out, nil
}
