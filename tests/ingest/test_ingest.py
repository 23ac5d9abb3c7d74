"""Ingest, rule by rule: grammars, first-parent, verdict cross-check, memory quirks,
profiles, metadata dialects, hardware resolution, symlinks, bundles, git process count."""

import json
import os
import subprocess
import sys

import pytest

from optrace.errors import InputError
from optrace.example.repo_builder import CommitSpec, build_trace, make_bundle
from optrace.ingest.hardware import HardwareTable
from optrace.ingest.ingest import DEFAULT_NON_TARGET, Overrides, ingest
from tests.support import tracekit
from tests.support.schemas import assert_valid

TABLE = HardwareTable.load()


def run(path, over=Overrides(), label=None):
    rows, profiles, meta, _autotune = ingest(path, label=label, table=TABLE, over=over, non_target=DEFAULT_NON_TARGET)
    assert_valid(rows, "versions.schema.json")
    assert_valid(profiles, "profiles.schema.json")
    assert_valid(meta, "meta.schema.json")
    return {r["version"]: r for r in rows}, profiles, meta


def verdicts(rows):
    return {k: r["verdict"] for k, r in rows.items()}


def test_skill_era_grammar_and_revert_marker(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_003_softmax")
    rows, _, meta = run(tmp_path / "kernel_opt_003_softmax")
    assert verdicts(rows) == {"v0": "baseline", "v1": "kept", "v2": "reverted", "v3": "reverted"}
    assert rows["v2"]["verdict_basis"] == "undone by v3's revert commit"
    assert rows["v1"]["verdict_basis"].startswith("kernel.py changed")
    assert meta["slug"] == "003-softmax"


def test_iteration_era_grammar(tmp_path):
    tracekit.iteration_era(tmp_path / "t")
    rows, _, meta = run(tmp_path / "t")
    assert verdicts(rows) == {
        "v0": "baseline",
        "v1": "kept",
        "v2": "reverted",
        "v3": "reverted",
        "v4": "kept",
        "v5": "kept",
        "v6": "reverted",
    }
    # the untagged list-form dead end takes its version from the memory file it adds
    assert rows["v3"]["deadend_items"] == [
        "split-K reduction (atomics, contention)",
        "fp32 smem accumulate",
        "cp.async prefetch",
    ]
    assert rows["v4"]["no_change"] and rows["v6"]["no_change"]
    assert not rows["v5"]["infrastructure"]  # "BlockedLayout" is not "blocked"
    assert rows["v5"]["dsl"] == "gluon" and rows["v1"]["dsl"] == "triton"
    assert [c["subject"] for c in meta["non_version_commits"]] == ["chore(007): tidy README"]


def test_long_horizon_era_and_first_parent_only(tmp_path):
    tracekit.long_horizon_era(tmp_path / "t")
    rows, _, meta = run(tmp_path / "t")
    assert verdicts(rows) == {
        "v0": "baseline",
        "v1": "kept",
        "v2": "kept",
        "v3": "reverted",
        "v4": "kept",
        "v5": "reverted",
    }
    assert rows["v2"]["verdict_basis"] == "episode promote commit"
    assert rows["v3"]["outcome"] == "candidate_ready" and rows["v5"]["outcome"] == "blocked"
    assert rows["v5"]["infrastructure"]
    # the episode branch's `v4: kernel candidate` and trial commits are not the trace
    assert rows["v4"]["subject"] == "episode 3: promote verified long-horizon candidate"
    assert all("candidate" not in (c["subject"]) or "promote" in c["subject"] for c in meta["non_version_commits"])
    assert not meta["non_version_commits"]
    # the pin commit is metadata only: v1 keeps its kernel, the pin does not decide the verdict
    assert rows["v1"]["verdict_basis"] == "subject: framework baseline"
    assert rows["v1"]["sha"] != rows["v0"]["sha"] and rows["v1"]["kernel_changed"]
    # a merge commit's parent is the trace's previous commit (its first parent), never the merged branch's tip
    assert rows["v4"]["parent"] == rows["v3"]["sha"]
    branch_tip = subprocess.run(
        ["git", "rev-parse", f"{rows['v4']['sha']}^2"], cwd=tmp_path / "t", capture_output=True, text=True, check=True
    ).stdout.strip()
    assert branch_tip != rows["v3"]["sha"]
    assert rows["v3"]["parent"] == rows["v2"]["sha"] and rows["v0"]["parent"] is None


def test_carried_forward_and_incomplete_numbers_are_not_claimed(tmp_path):
    tracekit.long_horizon_era(tmp_path / "t")
    rows, _, _ = run(tmp_path / "t")
    assert rows["v3"]["geomean_us"] is None and rows["v3"]["carried_from"] == "v2"
    assert rows["v5"]["geomean_us"] is None and rows["v5"]["number_note"] == "measurement incomplete"


def test_kept_subject_without_kernel_change_is_not_kept(tmp_path):
    build_trace(
        tmp_path / "t",
        [
            CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), **tracekit.meta_files()}),
            CommitSpec("v1: committed (+4.0%)", {"memory/v1.json": tracekit.memory(1, 9.0)}),
            CommitSpec("v2: reverted (no gain) — dead-end recorded", {"kernel.py": tracekit.kernel(2)}),
        ],
    )
    rows, _, meta = run(tmp_path / "t")
    assert rows["v1"]["verdict"] == "none" and "kernel.py unchanged" in rows["v1"]["verdict_basis"]
    assert rows["v2"]["verdict"] == "reverted" and "changed nonetheless" in rows["v2"]["verdict_basis"]
    assert any("v1: subject says kept" in w for w in meta["warnings"])
    assert any("v2: subject says reverted" in w for w in meta["warnings"])


def test_version_committed_twice_keeps_the_newest_commit(tmp_path):
    build_trace(
        tmp_path / "t",
        [
            CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), **tracekit.meta_files()}),
            CommitSpec("v1: committed (+2%)", {"kernel.py": tracekit.kernel(1)}),
            CommitSpec("v1: committed (+3%) amended", {"kernel.py": tracekit.kernel(2)}),
        ],
    )
    rows, _, _ = run(tmp_path / "t")
    assert rows["v1"]["subject"] == "v1: committed (+3%) amended"


def test_memory_only_version_and_variants(tmp_path):
    tracekit.iteration_era(
        tmp_path / "t",
        untracked={"memory/v9.json": tracekit.memory(9, 30.0), "memory/v5_512.json": "{}", "memory/live.json": "{}"},
    )
    rows, _, meta = run(tmp_path / "t")
    assert rows["v9"]["sha"] is None and rows["v9"]["verdict"] == "none"
    assert {v["file"] for v in meta["memory_variants"]} == {"memory/v5_512.json", "memory/live.json"}


def test_profiles_both_layouts_and_raw_ncu_csv(tmp_path):
    csv_lines = [
        "==PROF== Connected to process 4242 (python3)",
        "program output",
        "==PROF== Disconnected from process 4242",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
        '"0","4242","python3","127.0.0.1","_softmax_kernel","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","ns","12500",',
    ]
    tracekit.long_horizon_era(tmp_path / "t")
    files = {
        "profiles/v1/summary.txt": "===== NCU Profile Summary =====\nKernel: void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4>(long)\n",
        "profiles/v1/REPORT.md": "**Root cause**: RNG fill dominates\n",
        "profiles/v2_retry/summary.txt": "Kernel: _softmax_kernel\n",
        "profiles/episode_3/shape-0/ncu_time.csv": "\n".join(csv_lines) + "\n",
        "profiles/latest/summary.txt": "Kernel: x\n",
    }
    for rel, text in files.items():
        (tmp_path / "t" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "t" / rel).write_text(text)
    rows, profiles, meta = run(tmp_path / "t")
    assert rows["v1"]["profile_dirs"] == ["profiles/v1"] and rows["v1"]["usable_profile_dirs"] == []
    assert rows["v2"]["usable_profile_dirs"] == ["profiles/v2_retry"]
    # episode 3 was promoted as v4: its capture belongs to v4
    assert rows["v4"]["usable_profile_dirs"] == ["profiles/episode_3/shape-0"]
    cap = next(p for p in profiles if p["dir"] == "profiles/episode_3/shape-0")
    assert cap["kernel"] == "_softmax_kernel" and cap["duration_us"] == 12.5
    assert any("profiles/latest" in w for w in meta["warnings"])


def test_fib_dialect_metadata(tmp_path):
    tracekit.iteration_era(tmp_path / "t")
    _, _, meta = run(tmp_path / "t")
    assert meta["languages"] == ["triton"] and meta["default_dsl"] == "triton"
    assert meta["n_shapes"] == 2 and meta["axes"] == {"const": {"hidden": 4096}, "var": ["batch_size"]}
    assert meta["operator_name"] == "softmax_h4096" and meta["description"] == "Row softmax, hidden 4096."
    assert meta["harness"] == "FlashInfer-Bench evaluator"
    assert meta["target"]["product"] == "h100" and "solution.json" in meta["target"]["basis"]


def test_sol_dialect_metadata_hardware_from_framework_baseline(tmp_path):
    tracekit.long_horizon_era(tmp_path / "t")
    _, _, meta = run(tmp_path / "t")
    assert meta["languages"] == ["pytorch"]  # the V0 wrapper; the DSL comes from the kernel
    assert meta["default_dsl"] == "triton"
    assert meta["target"] == {
        "vendor": "nvidia",
        "arch": "blackwell",
        "product": "b200",
        "isa": "sm_100",
        "basis": meta["target"]["basis"],
    }
    assert "framework_baseline.json" in meta["target"]["basis"]


def _with_solution_hw(tmp_path, hw):
    sol = json.dumps({"spec": {"language": "cuda", "target_hardware": hw}})
    build_trace(
        tmp_path / "kernel_opt_009_gemm",
        [
            CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0, "cuda"), "solution.json": sol}),
        ],
    )
    return tmp_path / "kernel_opt_009_gemm"


def test_gb200_is_not_b200(tmp_path):
    _, _, meta = run(_with_solution_hw(tmp_path, ["NVIDIA GB200"]))
    assert meta["target"]["product"] == "gb200"


def test_evaluator_traces_name_the_gpu(tmp_path):
    path = _with_solution_hw(tmp_path, ["LOCAL"])
    (path / "traces.jsonl").write_text(
        json.dumps({"evaluation": {"environment": {"hardware": "NVIDIA A800-SXM4-80GB"}}}) + "\n"
    )
    _, _, meta = run(path)
    assert meta["target"]["product"] == "a800" and "traces.jsonl" in meta["target"]["basis"]


def test_no_hardware_is_a_clear_error(tmp_path):
    path = _with_solution_hw(tmp_path, ["LOCAL"])
    with pytest.raises(InputError) as exc:
        run(path)
    assert str(path) in exc.value.where and "--config hardware=" in exc.value.problem


def test_no_hardware_cli_prints_one_line_and_writes_nothing(tmp_path):
    path = _with_solution_hw(tmp_path, ["LOCAL"])
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(path), "--out-dir", str(out)], capture_output=True, text=True
    )
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ") and "Traceback" not in res.stderr
    assert not out.exists()


def test_hardware_override_wins(tmp_path):
    _, _, meta = run(_with_solution_hw(tmp_path, ["LOCAL"]), over=Overrides(hardware="MI300X"))
    assert meta["target"]["vendor"] == "amd" and meta["target"]["arch"] == "cdna3"


def test_symlinks_out_of_the_trace_are_not_followed(tmp_path):
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "v7.json").write_text(tracekit.memory(7, 1.0))
    (secret / "summary.txt").write_text("Kernel: secret_kernel\n")
    tracekit.iteration_era(tmp_path / "t")
    os.symlink(secret / "v7.json", tmp_path / "t" / "memory" / "v7.json")
    (tmp_path / "t" / "profiles").mkdir()
    os.symlink(secret, tmp_path / "t" / "profiles" / "v1")
    rows, profiles, meta = run(tmp_path / "t")
    assert "v7" not in rows
    assert all(p["kernel"] != "secret_kernel" for p in profiles)
    assert any("symlink leaves the trace" in w for w in meta["warnings"])


def test_bundle_gives_the_same_history(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_002_softmax")
    bundle = make_bundle(tmp_path / "kernel_opt_002_softmax", tmp_path / "kernel_opt_002_softmax.bundle")
    tree_rows, _, tree_meta = run(tmp_path / "kernel_opt_002_softmax")
    bundle_rows, _, bundle_meta = run(bundle)
    assert bundle_rows == tree_rows
    assert bundle_meta["slug"] == tree_meta["slug"] == "002-softmax"
    assert bundle_meta["head_sha"] == tree_meta["head_sha"]


def test_not_a_trace_is_a_clear_error(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="not a git work tree"):
        run(tmp_path / "plain")
    (tmp_path / "x.bundle").write_text("garbage")
    with pytest.raises(InputError, match="not a readable git bundle"):
        run(tmp_path / "x.bundle")


def _git_calls(tmp_path, trace) -> list[str]:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    log = tmp_path / "git-calls.log"
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    (shim / "git").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    log.write_text("")
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"}
    subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(trace), "--out-dir", str(tmp_path / "o")],
        check=True,
        env=env,
        capture_output=True,
    )
    return sorted(_subcommand(line.split()) for line in log.read_text().splitlines())


def _subcommand(argv: list[str]) -> str:
    """The git subcommand of one logged argv (after --no-pager and the `-c key=value` overrides)."""
    it = iter(argv)
    for arg in it:
        if arg == "-c":
            next(it)
        elif not arg.startswith("-"):
            return arg
    return ""


def _synthetic(dest, n):
    commits = [
        CommitSpec(
            "V0: baseline",
            {"kernel.py": tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 100.0), **tracekit.meta_files()},
        )
    ]
    for i in range(1, n):
        kept = i % 3 != 0
        commits.append(
            CommitSpec(
                f"v{i}: committed (+1.6%)" if kept else f"v{i}: reverted (slower) — dead-end recorded",
                {"kernel.py": tracekit.kernel(i)}
                if kept
                else {} | {f"memory/v{i}.json": tracekit.memory(i, 100.0 - i * 0.01)},
            )
        )
    build_trace(dest, commits)


def test_git_processes_do_not_grow_with_versions(tmp_path):
    _synthetic(tmp_path / "small", 10)
    _synthetic(tmp_path / "large", 120)
    small, large = _git_calls(tmp_path, tmp_path / "small"), _git_calls(tmp_path, tmp_path / "large")
    assert small == large
    # one history walk and one blob reader; GitPython adds its own `git version` probes
    assert large.count("log") == 1 and large.count("cat-file") == 1
    assert set(large) <= {"log", "cat-file", "version"}


def test_ingest_is_deterministic(tmp_path):
    tracekit.iteration_era(tmp_path / "t")
    outs = []
    for i in range(2):
        subprocess.run(
            [sys.executable, "-m", "optrace", "ingest", str(tmp_path / "t"), "--out-dir", str(tmp_path / f"o{i}")],
            check=True,
            capture_output=True,
        )
        outs.append({p.name: p.read_bytes() for p in (tmp_path / f"o{i}").iterdir()})
    assert outs[0] == outs[1] and set(outs[0]) == {"versions.jsonl", "profiles.jsonl", "meta.json", "autotune.jsonl"}


def test_blobs_read_in_one_batch_match_single_reads_and_a_missing_one_is_one_line(tmp_path):
    """read_blobs gives read_blob's answers, in order, through GitPython's persistent object reader; a
    missing object is an InputError, and the reader's next answer is still the blob asked for (one
    request, one answer: no stale answer to a later read)."""
    from optrace.ingest.git_history import open_trace

    build_trace(
        tmp_path / "t",
        [CommitSpec(f"v{i}: step {i}", {"kernel.py": f"import triton\nx = {i}\n" * (i + 1)}) for i in range(40)],
    )
    with open_trace(tmp_path / "t") as trace:
        trace.history.start_log()
        blobs = sorted({c.kernel_blob for c in trace.history.commits()})
        batch = dict(trace.history.read_blobs(blobs, cap=200))
        assert batch == {b: trace.history.read_blob(b, cap=200) for b in blobs}
        assert any(v is None for v in batch.values()) and any(v for v in batch.values())  # the cap applies
        missing = "0" * 39 + "1"
        with pytest.raises(InputError, match="missing"):
            for _ in trace.history.read_blobs([blobs[0], missing, *blobs[1:]]):
                pass
        assert trace.history.read_blob(blobs[1]) == git_show(tmp_path / "t", blobs[1])


def git_show(repo, blob):
    return subprocess.run(["git", "cat-file", "blob", blob], cwd=repo, capture_output=True, check=True).stdout


def test_a_bundle_with_odd_file_names_reads_like_its_tree(tmp_path):
    # `git ls-tree` puts a tab between an entry's metadata and its path, and a path may hold tabs itself
    build_trace(
        tmp_path / "t",
        [
            CommitSpec(
                "V0: baseline",
                {
                    "kernel.py": tracekit.kernel(0),
                    "memory/v0.json": tracekit.memory(0, 10.0),
                    "notes/a\tb.md": "tab",
                    "notes/x y.md": "space",
                    **tracekit.meta_files(),
                },
            ),
            CommitSpec(
                "v1: committed (+9%)", {"kernel.py": tracekit.kernel(1), "memory/v1.json": tracekit.memory(1, 9.0)}
            ),
        ],
    )
    tree_rows, _, _ = run(tmp_path / "t")
    bundle_rows, _, _ = run(make_bundle(tmp_path / "t", tmp_path / "t.bundle"))
    assert bundle_rows == tree_rows and bundle_rows["v1"]["geomean_us"] == 9.0


def test_a_git_error_is_one_printable_capped_line():
    from optrace.ingest.gitcmd import MAX_GITERR_CHARS, clean_git_error

    err = clean_git_error(
        "t.bundle", b"warning: ignored\n\n  fatal: bad object \x1b[31m~dead\xff  \n\n", "git log failed"
    )
    assert (err.where, err.problem) == ("t.bundle", "git log failed (fatal: bad object ?[31m~dead?)")
    assert str(err) == "t.bundle: git log failed (fatal: bad object ?[31m~dead?)"
    assert clean_git_error("t", "fatal: x", "w").problem == "w (fatal: x)"  # text as well as bytes
    assert clean_git_error("t", None, "w").problem == clean_git_error("t", b"\n \n", "w").problem == "w (git failed)"
    long = clean_git_error("t", b"fatal: " + b"y" * 500, "w").problem
    assert long == "w (fatal: " + "y" * (MAX_GITERR_CHARS - len("fatal: ")) + ")"
