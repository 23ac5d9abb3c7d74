"""Stage family validate: the store gates, the trace gates, and the validation stage that runs them."""
