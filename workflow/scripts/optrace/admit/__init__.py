"""Admission: staged records into a live store, never weaker than the store's own checker."""
