-- regina._pop_claim reports its outcome through out parameters (the claim's messages, reason,
-- wake-up instant and what the metrics count), so the composite type it used to return is unused.
drop type regina.claim_outcome;
