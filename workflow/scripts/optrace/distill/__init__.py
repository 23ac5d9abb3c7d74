"""Stage family distill: packets -> records, by the deterministic drafter or an agent."""
