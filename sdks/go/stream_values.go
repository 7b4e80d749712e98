package regina

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
)

// Aggregates, and the helpers the stream engine uses on decoded JSON values.

// aggregateReducer implements Aggregate: count adds the extractor's number (1 when it returns
// none), sum adds, min / max keep the extremes (nil before the first number), avg the mean, and
// any other name sums. Non-numbers are ignored. Results carry exactly the named fields.
func aggregateReducer(fields map[string]Extractor) reducer {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	_, hasAvg := fields["avg"]
	initial := func() any {
		acc := map[string]any{}
		for _, name := range names {
			if name == "min" || name == "max" {
				acc[name] = nil
			} else {
				acc[name] = 0.0
			}
		}
		if hasAvg {
			acc["__avgSum"], acc["__avgCount"] = 0.0, 0.0
		}
		return acc
	}
	add := func(current, value any, _ StreamContext) (any, error) {
		acc := map[string]any{}
		if m, ok := current.(map[string]any); ok {
			for k, v := range m {
				acc[k] = v
			}
		} else {
			acc = initial().(map[string]any)
		}
		for _, name := range names {
			aggregateField(acc, name, fields[name](value))
		}
		return acc, nil
	}
	result := func(acc any) any {
		m, ok := acc.(map[string]any)
		if !ok {
			return acc
		}
		out := make(map[string]any, len(names))
		for _, name := range names {
			out[name] = m[name]
		}
		return out
	}
	return reducer{initial: initial, add: add, result: result}
}

func aggregateField(acc map[string]any, name string, raw any) {
	n, isNumber := toFloat(raw)
	previous, hasPrevious := number(acc[name])
	switch {
	case name == "count":
		if !isNumber {
			n = 1
		}
		acc[name] = previous + n
	case !isNumber:
	case name == "min":
		if hasPrevious {
			n = math.Min(previous, n)
		}
		acc[name] = n
	case name == "max":
		if hasPrevious {
			n = math.Max(previous, n)
		}
		acc[name] = n
	case name == "avg":
		sum, _ := number(acc["__avgSum"])
		count, _ := number(acc["__avgCount"])
		acc["__avgSum"], acc["__avgCount"] = sum+n, count+1
		acc["avg"] = (sum + n) / (count + 1)
	default:
		acc[name] = previous + n
	}
}

// toFloat reads any Go number as a float64.
func toFloat(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// number reads a JSON number (float64, or an int64 the engine wrote itself).
func number(v any) (float64, bool) {
	f, ok := v.(float64)
	if !ok {
		if i, isInt := v.(int64); isInt {
			return float64(i), true
		}
	}
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare([]byte(keys[i]), []byte(keys[j])) < 0 })
	return keys
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// cloneJSON copies a JSON value deeply, as it would come back from the broker.
func cloneJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}
