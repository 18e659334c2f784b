package training

import (
	"fmt"
	"strconv"
	"strings"
)

// A CronJob's schedule, checked at plan the way the CronJob controller
// parses it (five fields or a @macro); the API server accepts a schedule the
// controller then never runs, so this is the only plan-time guard.

var cronMacros = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is value min+i
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day of week", min: 0, max: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// CheckCron reports why s is not a schedule the CronJob controller runs.
func CheckCron(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return fmt.Errorf("the schedule is empty")
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return fmt.Errorf("%q: a time zone inside the schedule is refused by the API server; schedules run in the controller's time zone (UTC on most clusters)", s)
	}
	if strings.HasPrefix(s, "@") {
		if cronMacros[strings.ToLower(s)] {
			return nil
		}
		return fmt.Errorf("%q is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly", s)
	}
	parts := strings.Fields(s)
	if len(parts) != len(cronFields) {
		return fmt.Errorf("%q has %d fields; a schedule has 5: minute hour day-of-month month day-of-week, e.g. \"0 */6 * * *\"", s, len(parts))
	}
	for i, p := range parts {
		if err := cronFields[i].check(p); err != nil {
			return fmt.Errorf("%q: %s field %q: %v", s, cronFields[i].name, p, err)
		}
	}
	return nil
}

func (f cronField) check(expr string) error {
	for _, item := range strings.Split(expr, ",") {
		if err := f.checkItem(item); err != nil {
			return err
		}
	}
	return nil
}

func (f cronField) checkItem(item string) error {
	rng, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || n < 1 {
			return fmt.Errorf("step %q is not a positive number", step)
		}
	}
	if rng == "*" || rng == "?" {
		return nil
	}
	lo, hi, isRange := strings.Cut(rng, "-")
	a, err := f.value(lo)
	if err != nil {
		return err
	}
	if !isRange {
		return nil
	}
	b, err := f.value(hi)
	if err != nil {
		return err
	}
	if a > b {
		return fmt.Errorf("range %s is backwards", rng)
	}
	return nil
}

func (f cronField) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%d is outside %d-%d", n, f.min, f.max)
	}
	return n, nil
}
