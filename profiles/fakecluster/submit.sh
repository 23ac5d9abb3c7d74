#!/usr/bin/env bash
# Fake `sbatch`: run the job script in the background and print a job id. Snakemake watches the
# jobfinished/jobfailed markers the job script writes (shared file system, as on most sites).
jobscript="$1"
nohup bash "$jobscript" > /dev/null 2>&1 &
echo "$!"
