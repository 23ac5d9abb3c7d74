"""The embedded example trace: its sources (package data) and the deterministic repository builder."""
