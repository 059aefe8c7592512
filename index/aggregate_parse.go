package index

// This file checks an aggregation request against a table: the kinds,
// their parameters and columns, and the sub-aggregations.

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseAggs reads an aggs object; parent is the path of the enclosing
// aggregation ("" at the top).
func parseAggs(t *Table, v any, parent string) ([]*aggNode, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if parent == "" {
			return nil, aggErrorf("aggs must be an object of aggregation names to aggregations")
		}
		return nil, aggErrorf("aggregation [%s]: aggs must be an object of aggregation names to aggregations", parent)
	}
	var out []*aggNode
	for _, key := range sortedKeys(m) {
		name := key
		if parent != "" {
			name = parent + "." + key
		}
		if key == "" || strings.HasPrefix(key, "$") {
			return nil, aggErrorf("aggregation [%s]: an aggregation name must not be empty or start with $", name)
		}
		expr, ok := m[key].(map[string]any)
		if !ok {
			return nil, aggErrorf("aggregation [%s]: an aggregation must be an object like {\"count\": \"*\"}, got %s", name, describe(m[key]))
		}
		if len(expr) != 1 {
			return nil, aggErrorf("aggregation [%s]: an aggregation has exactly one kind, got %d keys", name, len(expr))
		}
		var kind string
		for kind = range expr {
		}
		n, err := parseAgg(t, name, kind, expr[kind])
		if err != nil {
			return nil, err
		}
		n.key = key
		out = append(out, n)
	}
	return out, nil
}

// aggKinds lists the kinds and whether they are bucket kinds.
var aggKinds = map[string]bool{
	"count": false, "sum": false, "min": false, "max": false, "average": false,
	"percentiles": false, "uniqueCount": false,
	"dateHistogram": true, "topValues": true, "numericHistogram": true,
}

// aggParams are the parameters each kind takes besides column and aggs.
var aggParams = map[string][]string{
	"count":            {"filter"},
	"sum":              {"column"},
	"min":              {"column"},
	"max":              {"column"},
	"average":          {"column"},
	"percentiles":      {"column", "percentiles"},
	"uniqueCount":      {"column", "precisionThreshold"},
	"dateHistogram":    {"column", "interval", "calendarInterval", "timezone", "aggs"},
	"topValues":        {"column", "size", "aggs"},
	"numericHistogram": {"column", "interval", "offset", "aggs"},
}

// parseAgg reads one aggregation of a kind.
func parseAgg(t *Table, name, kind string, arg any) (*aggNode, error) {
	bucket, known := aggKinds[kind]
	if !known {
		return nil, aggErrorf("aggregation [%s]: unknown aggregation kind [%s]", name, kind)
	}
	n := &aggNode{name: name, kind: kind}
	if kind == "count" {
		if s, ok := arg.(string); ok {
			if s != "*" {
				return nil, aggErrorf("aggregation [%s]: count takes \"*\" or {\"filter\": ...}, got %s", name, describe(arg))
			}
			return n, nil
		}
	}
	p, ok := arg.(map[string]any)
	if !ok {
		return nil, aggErrorf("aggregation [%s]: the parameters of %s must be an object, got %s", name, kind, describe(arg))
	}
	for _, k := range sortedKeys(p) {
		if k == "aggs" && !bucket {
			return nil, aggErrorf("aggregation [%s]: %s is a metric and takes no sub-aggregations", name, kind)
		}
		if !containsString(aggParams[kind], k) {
			return nil, aggErrorf("aggregation [%s]: unknown parameter [%s] of %s", name, k, kind)
		}
	}
	if kind == "count" {
		if f, ok := p["filter"]; ok && f != nil {
			node, err := ParseFilterValue(t, f)
			if err != nil {
				var fe *InputError
				if errors.As(err, &fe) {
					return nil, aggErrorf("aggregation [%s]: %s", name, fe.Message)
				}
				return nil, err
			}
			n.filter = node
		}
		return n, nil
	}
	colName, ok := p["column"].(string)
	if !ok {
		if _, given := p["column"]; given {
			return nil, aggErrorf("aggregation [%s]: column must be a column name", name)
		}
		return nil, aggErrorf("aggregation [%s]: %s needs a column", name, kind)
	}
	c := aggColumn(t, colName)
	if c == nil {
		return nil, aggErrorf("aggregation [%s]: column [%s]: column not found", name, colName)
	}
	if c.Type == TypeLink {
		return nil, aggErrorf("aggregation [%s]: column [%s]: link columns cannot be aggregated", name, colName)
	}
	var types []ColumnType
	switch kind {
	case "sum", "min", "max", "average", "percentiles", "numericHistogram":
		types = []ColumnType{TypeInt, TypeFloat}
	case "uniqueCount":
		types = []ColumnType{TypeString, TypeEmail, TypeText, TypeInt, TypeFloat, TypeBool, TypeDatetime, TypeMultiple}
	case "dateHistogram":
		types = []ColumnType{TypeDatetime}
	case "topValues":
		types = []ColumnType{TypeString, TypeEmail, TypeInt, TypeFloat, TypeBool}
	}
	if !containsType(types, c.Type) {
		return nil, aggErrorf("aggregation [%s]: column [%s]: %s is not supported on %s columns", name, colName, kind, c.Type)
	}
	n.col = c
	var err error
	switch kind {
	case "percentiles":
		err = n.parsePercentiles(p["percentiles"])
	case "uniqueCount":
		if v, ok := p["precisionThreshold"]; ok {
			var pt int64
			pt, err = intParam(name, "precisionThreshold", v)
			if err == nil && (pt < 0 || pt > maxPrecisionThreshold) {
				err = aggErrorf("aggregation [%s]: precisionThreshold must be between 0 and %d", name, maxPrecisionThreshold)
			}
		}
	case "dateHistogram":
		err = n.parseDateHistogram(p)
	case "topValues":
		n.size = defaultTopValuesSize
		if v, ok := p["size"]; ok {
			var size int64
			size, err = intParam(name, "size", v)
			switch {
			case err != nil:
			case size > maxTopValuesSize:
				err = aggErrorf("aggregation [%s]: size must not exceed %d", name, maxTopValuesSize)
			case size < 1:
				err = aggErrorf("aggregation [%s]: size must be at least 1", name)
			}
			n.size = int(size)
		}
	case "numericHistogram":
		err = n.parseNumericHistogram(p)
	}
	if err != nil {
		return nil, err
	}
	if sub, ok := p["aggs"]; ok && sub != nil {
		if n.sub, err = parseAggs(t, sub, name); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// aggColumn finds a column of t by path, meta columns included; nil when
// there is none.
func aggColumn(t *Table, name string) *Column {
	switch {
	case name == "id":
		return IDColumn
	case t.Meta != "" && name == t.Meta+".version":
		return VersionColumn
	case t.Meta != "" && name == t.Meta+".createdAt":
		return CreatedAtColumn
	case t.Meta != "" && name == t.Meta+".updatedAt":
		return UpdatedAtColumn
	}
	return t.Columns[name]
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsType(list []ColumnType, t ColumnType) bool {
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}

// intParam reads an integer parameter.
func intParam(agg, param string, v any) (int64, error) {
	n, ok := numberOf(v)
	if ok {
		if i, isInt := n.int(); isInt {
			return i, nil
		}
	}
	return 0, aggErrorf("aggregation [%s]: %s must be an integer, got %s", agg, param, describe(v))
}

// floatParam reads a finite number parameter.
func floatParam(agg, param string, v any) (float64, error) {
	if n, ok := numberOf(v); ok {
		return n.float(), nil
	}
	return 0, aggErrorf("aggregation [%s]: %s must be a number, got %s", agg, param, describe(v))
}

func (n *aggNode) parsePercentiles(v any) error {
	if v == nil {
		return aggErrorf("aggregation [%s]: percentiles needs a list of percentiles", n.name)
	}
	list, ok := asList(v)
	if !ok {
		return aggErrorf("aggregation [%s]: percentiles must be a list of numbers between 0 and 100", n.name)
	}
	if len(list) == 0 {
		return aggErrorf("aggregation [%s]: percentiles must not be empty", n.name)
	}
	for _, e := range list {
		f, err := floatParam(n.name, "each percentile", e)
		if err != nil {
			return err
		}
		if f < 0 || f > 100 {
			return aggErrorf("aggregation [%s]: percentile %s is not between 0 and 100", n.name, strconv.FormatFloat(f, 'g', -1, 64))
		}
		n.percentiles = append(n.percentiles, f)
	}
	return nil
}

var (
	intervalPattern = regexp.MustCompile(`^([0-9]+)(ms|s|m|h|d)$`)
	tzPattern       = regexp.MustCompile(`^[+-][01]\d:[0-5]\d$`)
	intervalUnits   = map[string]int64{"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9, "d": 86400e9}
	calendarUnits   = map[string]bool{"minute": true, "hour": true, "day": true, "week": true, "month": true, "quarter": true, "year": true}
)

func (n *aggNode) parseDateHistogram(p map[string]any) error {
	iv, hasInterval := p["interval"]
	cv, hasCalendar := p["calendarInterval"]
	if hasInterval == hasCalendar {
		return aggErrorf("aggregation [%s]: dateHistogram takes exactly one of interval and calendarInterval", n.name)
	}
	if hasInterval {
		s, _ := iv.(string)
		m := intervalPattern.FindStringSubmatch(s)
		if m == nil {
			return aggErrorf("aggregation [%s]: interval must be a number and a unit (d, h, m, s or ms), like 5d, got %s", n.name, describe(iv))
		}
		count, err := strconv.ParseInt(m[1], 10, 64)
		unit := intervalUnits[m[2]]
		if err != nil || count <= 0 || count > math.MaxInt64/unit {
			return aggErrorf("aggregation [%s]: interval [%s] is out of range", n.name, s)
		}
		n.fixed = count * unit
	} else {
		s, _ := cv.(string)
		if !calendarUnits[s] {
			return aggErrorf("aggregation [%s]: calendarInterval must be minute, hour, day, week, month, quarter or year, got %s", n.name, describe(cv))
		}
		n.calendar = s
	}
	n.loc = time.UTC
	if tz, ok := p["timezone"]; ok {
		s, _ := tz.(string)
		if !tzPattern.MatchString(s) {
			return aggErrorf("aggregation [%s]: timezone must look like +02:00 or -05:30, got %s", n.name, describe(tz))
		}
		h, _ := strconv.Atoi(s[1:3])
		m, _ := strconv.Atoi(s[4:6])
		n.offset = h*3600 + m*60
		if s[0] == '-' {
			n.offset = -n.offset
		}
		if n.offset != 0 {
			n.loc = time.FixedZone("", n.offset)
		}
	}
	return nil
}

func (n *aggNode) parseNumericHistogram(p map[string]any) error {
	iv, ok := p["interval"]
	if !ok {
		return aggErrorf("aggregation [%s]: numericHistogram needs an interval", n.name)
	}
	f, err := floatParam(n.name, "interval", iv)
	if err != nil {
		return err
	}
	if !(f > 0) {
		return aggErrorf("aggregation [%s]: interval must be greater than 0", n.name)
	}
	n.interval = f
	if ov, ok := p["offset"]; ok {
		if n.numOffset, err = floatParam(n.name, "offset", ov); err != nil {
			return err
		}
	}
	return nil
}
