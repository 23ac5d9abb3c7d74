"""Stage family validate: the store gates, the trace gates, and the validation stage that runs them.

The validation stage's file formats are named here, so a reader of its reports (the run summary in the
Snakemake controller) can check them without importing the gates.
"""

REPORT_SCHEMA = "optrace-validation-1"
SUMMARY_SCHEMA = "optrace-validation-summary-2"
