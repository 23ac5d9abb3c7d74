# Admission proposals for the live store: `snakemake promote` writes what `optrace gate commit-all`
# would do (insert / confirm / conflict per staged record) and never touches the store itself.
rule promote:
    input:
        unpack(live_store_inputs),
        records=local(rules.store_tree.output.records),
    output:
        proposals=reports("match.json"),
    log:
        logs("promote.log"),
    benchmark:
        benchmarks("promote.tsv")
    conda:
        ENV
    params:
        staging=input_folder("records"),
        store=config["live_store"],
    shell:
        # exit 1 = a staged record the live store would refuse: listed in the proposals, not a failure
        optrace_shell(
            "gate match --all {params.staging:q} --store {params.store:q} --out {output.proposals:q} "
            "> {log} 2>&1 || [ $? -eq 1 ]"
        )
