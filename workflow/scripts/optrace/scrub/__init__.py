"""Scrubbing: what counts as a leak, and the scrubber that removes it from agent-facing text."""
