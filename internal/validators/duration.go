package validators

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// ParseDuration parses a Go duration ("30s", "5m", "2h") that is positive,
// at least min and, when max is not 0, at most max.
func ParseDuration(s string, min, max time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as \"30s\", \"5m\" or \"2h\"", s)
	case d <= 0:
		return 0, fmt.Errorf("%q must be positive", s)
	case d < min || max > 0 && d > max:
		return 0, fmt.Errorf("%q is not %s", s, durationRange(min, max))
	}
	return d, nil
}

// Duration accepts what ParseDuration accepts: a positive Go duration, at
// least min and, when max is not 0, at most max.
func Duration(min, max time.Duration) validator.String {
	desc := "a positive duration"
	if min > 0 || max > 0 {
		desc = "a duration " + durationRange(min, max)
	}
	return stringCheck{desc, func(s string) []string {
		if _, err := ParseDuration(s, min, max); err != nil {
			return []string{err.Error()}
		}
		return nil
	}}
}

func durationRange(min, max time.Duration) string {
	switch {
	case max == 0:
		return "of at least " + shortDuration(min)
	case min == 0:
		return "of at most " + shortDuration(max)
	}
	return "between " + shortDuration(min) + " and " + shortDuration(max)
}

// shortDuration prints 5m and 168h rather than 5m0s and 168h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
