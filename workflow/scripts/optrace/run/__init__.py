"""How a Snakemake run is driven: the trace sheet, config checks, code digests, the per-trace guard, locks, the run summary."""
