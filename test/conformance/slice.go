package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadSlice reads a list of spec names, one per line (the full text, as
// the report's table shows it); blank lines and lines starting with # are
// ignored. A name listed twice is an error.
func ReadSlice(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read slice: %w", err)
	}
	defer f.Close()
	var names []string
	var errs []error
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if first, dup := seen[line]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %q is listed already on line %d", path, n, line, first))
			continue
		}
		seen[line] = n
		names = append(names, line)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read %s: %w", path, err))
	}
	if len(names) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s lists no spec", path))
	}
	return names, errors.Join(errs...)
}
