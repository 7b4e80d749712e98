package regina

import (
	"fmt"
	"math"
)

// Ready-made gate functions for Stream.Gate: rate limiters whose counters live in the key's gate
// state, so they survive restarts and are shared by every run of the query. A denied record
// parks the rest of its partition's batch: the allowed prefix is committed and the lease is kept,
// so the tail comes back, in order, when the lease ends. Sizing: a partition passes at most about
// min(refill rate, capacity / leaseTime) records per second.

// CostFunc gives the cost of a value for a rate-limiting gate (nil: every value costs 1).
type CostFunc func(value any) float64

// TokenBucketGate is a token bucket per key: a record passes when the bucket holds at least its
// cost, which is then taken out. The bucket starts full. State: {tokens, refilledAt}. It panics
// when capacity or refillPerSecond is not positive.
func TokenBucketGate(capacity, refillPerSecond float64, cost CostFunc) GateFunc {
	mustBePositive(capacity, "capacity")
	mustBePositive(refillPerSecond, "refillPerSecond")
	return func(value any, g *GateContext) (bool, error) {
		now := float64(g.StreamTime.UnixMilli())
		tokens, ok := number(g.State["tokens"])
		if !ok {
			tokens = capacity
		}
		since, ok := number(g.State["refilledAt"])
		if !ok {
			since = now
		}
		available := math.Min(capacity, tokens+math.Max(0, now-since)/1000*refillPerSecond)
		g.State["refilledAt"] = math.Max(since, now)
		price, err := costOf(cost, value)
		if err != nil {
			return false, err
		}
		allowed := available >= price
		if allowed {
			available -= price
		}
		g.State["tokens"] = available
		return allowed, nil
	}
}

// SlidingWindowGate allows at most limit per window and key, estimated from the current and
// the previous fixed window (the previous one weighted by how much of it still overlaps): cheap,
// and close to a true sliding window. State: {window, current, previous}. It panics when limit
// or windowSeconds is not positive.
func SlidingWindowGate(limit, windowSeconds float64, cost CostFunc) GateFunc {
	mustBePositive(limit, "limit")
	mustBePositive(windowSeconds, "windowSeconds")
	windowMs := windowSeconds * 1000
	return func(value any, g *GateContext) (bool, error) {
		now := float64(g.StreamTime.UnixMilli())
		current := math.Floor(now / windowMs)
		if stored, _ := number(g.State["window"]); g.State["window"] == nil || stored != current {
			kept, ok := number(g.State["current"])
			if g.State["window"] == nil || stored != current-1 || !ok {
				kept = 0
			}
			g.State["previous"], g.State["current"], g.State["window"] = kept, 0.0, current
		}
		previous, _ := number(g.State["previous"])
		count, _ := number(g.State["current"])
		overlap := 1 - (now-current*windowMs)/windowMs
		price, err := costOf(cost, value)
		if err != nil {
			return false, err
		}
		if previous*overlap+count+price > limit {
			return false, nil
		}
		g.State["current"] = count + price
		return true, nil
	}
}

func mustBePositive(v float64, what string) {
	if !(v > 0) || math.IsInf(v, 0) {
		panic(fmt.Sprintf("regina: %s must be a positive number", what))
	}
}

func costOf(cost CostFunc, value any) (float64, error) {
	if cost == nil {
		return 1, nil
	}
	price := cost(value)
	if !(price >= 0) || math.IsInf(price, 0) {
		return 0, fmt.Errorf("regina: a gate's cost must be a non-negative number, got %v", price)
	}
	return price, nil
}
