"""Stage family report: recon of what a trace holds and can yield."""
