# Admission proposals for the live store: `snakemake promote` writes what `optrace gate commit-all`
# would do (insert / confirm / conflict per staged record) and never touches the store itself.
rule promote:
    input:
        unpack(live_store_inputs),
        index=rules.stage.output.index,
    output:
        proposals=f"{RESULTS}/staging/reports/match.json",
    params:
        store=shell_quote(config["live_store"]),
        code=code_digest("gate"),
    log:
        f"{RESULTS}/logs/promote.log",
    shell:
        # exit 1 = a staged record the live store would refuse: listed in the proposals, not a failure
        "{PY} -m optrace gate match --all {RESULTS}/staging --store {params.store} --out {output.proposals} "
        "> {log} 2>&1 || [ $? -eq 1 ]"
