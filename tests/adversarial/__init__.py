"""Planted-defect suite: fabrications every gate must catch, benign rewrites every gate must pass."""
