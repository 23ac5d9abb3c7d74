"""Hardware resolution: the table, the text a trace names its GPU in, exact tokens.

The table is matched by whole tokens, exact spelling first; never by substring (the reference turned
"NVIDIA GB200" into b200 and found nothing in "H20" or "sm_90").
"""

from __future__ import annotations

import copy

import pytest
import yaml

from optrace.errors import InputError
from optrace.ingest.hardware import (
    DEFAULT_TARGETS,
    HardwareTable,
    Target,
    in_store_vocabulary,
    products_named,
    resolve,
    target_from_override,
    tokens,
)

TABLE_DOC = yaml.safe_load(DEFAULT_TARGETS.read_text(encoding="utf-8"))
ALL_SPELLINGS = [
    (entry["product"], spelling)
    for entry in TABLE_DOC["products"]
    for spelling in (entry["product"], *entry["aliases"])
]


@pytest.fixture(scope="module")
def table() -> HardwareTable:
    return HardwareTable.load(DEFAULT_TARGETS)


def product(table, text):
    part = table.match(text)
    return part and part.product


# ---------------------------------------------------------------- the table itself


def test_table_lists_the_common_data_centre_and_workstation_gpus(table):
    required = {
        "a100",
        "a800",
        "a10",
        "a30",
        "a40",
        "a6000",
        "h100",
        "h800",
        "h20",
        "h200",
        "gh200",
        "b200",
        "b300",
        "gb200",
        "gb300",
        "l4",
        "l20",
        "l20n",
        "l40",
        "l40s",
        "rtx4090",
        "rtx6000ada",
        "rtx5090",
        "rtxpro6000",
        "mi210",
        "mi250x",
        "mi300a",
        "mi300x",
        "mi308x",
        "mi325x",
        "mi350x",
        "mi355x",
    }
    assert required <= set(table.products)


@pytest.mark.parametrize(
    "name, vendor, arch, isa",
    [
        ("a100", "nvidia", "ampere", "sm_80"),
        ("a800", "nvidia", "ampere", "sm_80"),
        ("a6000", "nvidia", "ampere", "sm_86"),
        ("h20", "nvidia", "hopper", "sm_90"),
        ("gh200", "nvidia", "hopper", "sm_90"),
        ("b200", "nvidia", "blackwell", "sm_100"),
        ("gb200", "nvidia", "blackwell", "sm_100"),
        ("b300", "nvidia", "blackwell-ultra", "sm_103"),
        ("gb300", "nvidia", "blackwell-ultra", "sm_103"),
        ("l20n", "nvidia", "blackwell-geforce", "sm_120"),
        ("rtx5090", "nvidia", "blackwell-geforce", "sm_120"),
        ("rtxpro6000", "nvidia", "blackwell-geforce", "sm_120"),
        ("l20", "nvidia", "ada", "sm_89"),
        ("l40s", "nvidia", "ada", "sm_89"),
        ("rtx4090", "nvidia", "ada", "sm_89"),
        ("rtx6000ada", "nvidia", "ada", "sm_89"),
        ("mi250x", "amd", "cdna2", "gfx90a"),
        ("mi300a", "amd", "cdna3", "gfx942"),
        ("mi308x", "amd", "cdna3", "gfx942"),
        ("mi355x", "amd", "cdna4", "gfx950"),
        ("rx9070xt", "amd", "rdna4", "gfx1201"),
    ],
)
def test_table_facts(table, name, vendor, arch, isa):
    part = table.part(name)
    assert (part.vendor, part.arch, part.cc or part.gfx) == (vendor, arch, isa)


def test_nvidia_parts_carry_cc_and_amd_parts_carry_gfx(table):
    for name in table.products:
        part = table.part(name)
        if part.vendor == "nvidia":
            assert part.cc and not part.gfx, name
        else:
            assert part.gfx and not part.cc, name


@pytest.mark.parametrize("expected, spelling", ALL_SPELLINGS)
def test_every_key_and_alias_resolves_to_its_product(table, expected, spelling):
    assert product(table, spelling) == expected


def test_no_spelling_is_claimed_twice():
    owners = {}
    for expected, spelling in ALL_SPELLINGS:
        assert owners.setdefault(tokens(spelling), expected) == expected, spelling


# ---------------------------------------------------------------- matching by whole tokens


@pytest.mark.parametrize(
    "text, expected",
    [
        ("NVIDIA GB200", "gb200"),  # the reference said b200
        ("GB200", "gb200"),
        ("B200", "b200"),
        ("NVIDIA B200", "b200"),
        ("H20", "h20"),  # the reference found nothing; a substring match would say h200
        ("NVIDIA H20", "h20"),
        ("H200", "h200"),
        ("NVIDIA A800-SXM4-80GB", "a800"),  # evaluator environment.hardware
        ("NVIDIA_H100", "h100"),  # FlashInfer-Bench spec.target_hardware
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("H100-SXM5-80GB", "h100"),
        ("NVIDIA H100 NVL", "h100"),
        ("RTX 4090", "rtx4090"),
        ("rtx4090", "rtx4090"),
        ("GeForce RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("AMD Instinct MI300X", "mi300x"),
        ("AMD Instinct MI308X", "mi308x"),
        ("L20", "l20"),
        ("L20N", "l20n"),
        ("A10", "a10"),
        ("A100", "a100"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx6000ada"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtxpro6000"),
        ("AMD Radeon RX 9070 XT", "rx9070xt"),  # the longest sequence wins over "RX 9070"
        ("AMD Radeon RX 9070", "rx9070"),
        ("AMD Instinct MI250X/MI250", "mi250x"),  # ROCm's name for both boards, an exact alias
        ("kernel_opt_3_flash_attention_l20n_production", "l20n"),  # workspace-name suffix
        ("- platform: NVIDIA H20 (96GB)", "h20"),  # README Task Context line
    ],
)
def test_match(table, text, expected):
    assert product(table, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "LOCAL",  # SOL-ExecBench: unknown
        "",
        "   ",
        "NVIDIA",
        "RTX 6000",  # Turing Quadro or Ada: not guessed
        "MI300",  # A or X: not guessed
        "4090",
        "rmsnorm_h4096",
        "gh2000",
        "xb200",
        "sm_90",  # an arch token, not a product
        "gfx942",
        "hopper",
    ],
)
def test_no_product(table, text):
    assert table.match(text) is None


def test_a_text_naming_two_products_is_ambiguous(table):
    assert table.match("NVIDIA H100 and NVIDIA B200") is None
    assert [p.product for p in table.find_all("NVIDIA H100 and NVIDIA B200")] == ["h100", "b200"]


def test_repeating_one_product_is_not_ambiguous(table):
    assert product(table, "H100 (NVIDIA H100 80GB HBM3)") == "h100"


def test_arch_tokens_are_matched_only_by_match_arch_token(table):
    part = table.match_arch_token("sm_90")
    assert (part.vendor, part.arch, part.product) == ("nvidia", "hopper", "any")
    for text, arch in [
        ("sm90", "hopper"),
        ("sm_90a", "hopper"),
        ("SM_120", "blackwell-geforce"),
        ("sm_103a", "blackwell-ultra"),
        ("gfx942", "cdna3"),
        ("gfx950", "cdna4"),
        ("gfx942:sramecc+:xnack-", "cdna3"),
        ("Blackwell Ultra", "blackwell-ultra"),
        ("blackwell", "blackwell"),
        ("- runtime arch: sm_100a", "blackwell"),
        ("sm_80 sm_90", None),
        ("LOCAL", None),
    ]:
        found = table.match_arch_token(text)
        assert (found and found.arch) == arch, text


# ---------------------------------------------------------------- resolve


def test_resolve_first_source_naming_a_product_wins(table):
    target = resolve(
        [
            ("solution.json spec.target_hardware", "LOCAL"),
            ("evaluator environment.hardware", "NVIDIA A800-SXM4-80GB"),
            ("workspace name", "kernel_opt_3_rmsnorm_h20"),
        ],
        table,
    )
    assert target == Target(
        "nvidia", "ampere", "a800", 'evaluator environment.hardware "NVIDIA A800-SXM4-80GB"', "sm_80"
    )


def test_resolve_prefers_a_product_anywhere_over_an_arch_token_earlier(table):
    target = resolve([("README runtime arch", "sm_90"), ("workspace name", "run_h20_prod")], table)
    assert (target.product, target.arch) == ("h20", "hopper")
    assert target.basis == 'workspace name "run_h20_prod"'


def test_resolve_falls_back_to_an_arch_token(table):
    target = resolve([("solution.json spec.target_hardware", "LOCAL"), ("README runtime arch", "sm_90")], table)
    assert (target.vendor, target.arch, target.product) == ("nvidia", "hopper", "any")
    assert target.basis.startswith('README runtime arch "sm_90"')
    assert "architecture only" in target.basis


def test_resolve_finds_nothing_rather_than_guessing(table):
    assert resolve([("solution.json spec.target_hardware", "LOCAL"), ("README", "a GPU")], table) is None
    assert resolve([], table) is None


def test_resolve_ignores_non_text_values(table):
    candidates = [("definition.json gpu", None), ("x", 90), ("solution.json", "B200")]
    assert resolve(candidates, table).product == "b200"


def test_resolve_skips_an_ambiguous_text_and_products_named_reports_it(table):
    candidates = [("README platform", "H100 or B200"), ("framework_baseline.json platform", "NVIDIA H20")]
    assert resolve(candidates, table).product == "h20"
    assert products_named(candidates, table) == [
        ("README platform", "h100"),
        ("README platform", "b200"),
        ("framework_baseline.json platform", "h20"),
    ]


def test_products_named_exposes_disagreeing_sources(table):
    candidates = [("solution.json", "B200"), ("evaluator", "NVIDIA GB200"), ("README", "sm_100")]
    assert resolve(candidates, table).product == "b200"
    assert products_named(candidates, table) == [("solution.json", "b200"), ("evaluator", "gb200")]


def test_basis_quotes_long_texts_shortened(table):
    text = "NVIDIA H100 " + "x" * 200
    basis = resolve([("README", text)], table).basis
    assert basis.startswith('README "NVIDIA H100 x') and len(basis) < 100


# ---------------------------------------------------------------- overrides


def test_override_by_product(table):
    assert target_from_override(None, None, "H20", table) == Target(
        "nvidia", "hopper", "h20", 'hardware override: product "H20"', "sm_90"
    )
    # the product's own ISA, not its arch's first one: an A10 is sm_86, an MI308X gfx942
    assert target_from_override(None, None, "A10", table).isa == "sm_86"
    assert target_from_override(None, None, "mi308x", table).isa == "gfx942"
    assert target_from_override("nvidia", "blackwell", "NVIDIA GB200", table).product == "gb200"
    assert target_from_override(None, None, "mi308x", table, where="traces.tsv row 2").basis == (
        'traces.tsv row 2: product "mi308x"'
    )


def test_override_product_that_contradicts_arch_or_vendor(table):
    with pytest.raises(InputError, match=r'arch "blackwell" contradicts product "h20", which is nvidia/hop'):
        target_from_override(None, "blackwell", "h20", table)
    with pytest.raises(InputError, match=r'vendor "amd" contradicts product "h100"'):
        target_from_override("amd", None, "h100", table)


def test_override_unknown_product_lists_known_ones(table):
    with pytest.raises(InputError) as exc:
        target_from_override(None, None, "H30", table, where="config.yaml: hardware")
    assert exc.value.where == "config.yaml: hardware"
    assert 'product "H30" is not in the hardware table' in exc.value.problem
    assert "h100" in exc.value.problem and "mi355x" in exc.value.problem


def test_override_product_naming_two_products(table):
    with pytest.raises(InputError, match=r"names several products \(h100, b200\)"):
        target_from_override(None, None, "H100/B200", table)


def test_override_by_vendor_and_arch(table):
    assert target_from_override("nvidia", "hopper", None, table) == Target(
        "nvidia", "hopper", "any", 'hardware override: arch "hopper", vendor "nvidia"'
    )
    target = target_from_override("AMD", "CDNA4", "", table)
    assert (target.vendor, target.arch, target.product) == ("amd", "cdna4", "any")


def test_override_arch_alone_infers_the_vendor(table):
    assert target_from_override(None, "rdna4", None, table).vendor == "amd"
    assert target_from_override(None, "sm_90", "any", table).arch == "hopper"  # an arch token is an arch


def test_override_accepts_arches_the_store_cannot_scope(table):
    target = target_from_override("nvidia", "ada", None, table)
    assert target.arch == "ada" and not in_store_vocabulary(target.arch)
    assert in_store_vocabulary("hopper") and in_store_vocabulary("generic")


def test_override_generic(table):
    assert target_from_override("generic", "generic", None, table).vendor == "generic"
    assert target_from_override("nvidia", "generic", None, table).vendor == "nvidia"
    with pytest.raises(InputError, match='vendor "generic" needs arch generic'):
        target_from_override("generic", "hopper", None, table)


@pytest.mark.parametrize(
    "vendor, arch, message",
    [
        ("nvidia", "pascal", r'arch "pascal" is not known; valid arches: .*ada.*blackwell-geforce.*hopper'),
        ("amd", "hopper", r'vendor "amd" does not make arch "hopper" \(that is nvidia\)'),
        ("intel", "hopper", r'vendor "intel" is not known; valid vendors: nvidia, amd, generic'),
        ("nvidia", None, r"state a product .* or an arch"),
        (None, None, r"got neither"),
    ],
)
def test_override_rejects_bad_values(table, vendor, arch, message):
    with pytest.raises(InputError, match=message):
        target_from_override(vendor, arch, None, table)


# ---------------------------------------------------------------- a bad table


def load_mutated(tmp_path, mutate):
    doc = copy.deepcopy(TABLE_DOC)
    mutate(doc)
    path = tmp_path / "targets.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        HardwareTable.load(path)
    assert exc.value.where == str(path)
    return exc.value.problem


def entry(doc, name):
    return next(e for e in doc["products"] if e["product"] == name)


def test_bad_table_missing_arch(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "h100").pop("arch"))
    assert problem.startswith('product "h100" (products[')
    assert "'arch' is a required property" in problem


def test_bad_table_unknown_vendor(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "mi300x").update(vendor="intel"))
    assert 'product "mi300x"' in problem and "vendor: 'intel' is not one of" in problem


def test_bad_table_unknown_arch(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "h20").update(arch="hopper-next"))
    assert 'product "h20"' in problem and "arch: 'hopper-next' is not one of" in problem


def test_bad_table_cc_on_an_amd_part(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "mi355x").update(cc="sm_90"))
    assert problem.startswith('product "mi355x"') and "cc is not allowed for vendor amd" in problem


def test_bad_table_uppercase_key(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "b200").update(product="B200"))
    assert 'product "B200"' in problem and "does not match" in problem


def test_bad_table_alias_claimed_by_two_products(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "h200")["aliases"].append("NVIDIA_H20"))
    assert 'product "h200"' in problem and '"NVIDIA_H20" is already a spelling of product "h20"' in problem


def test_bad_table_product_filed_under_the_wrong_arch(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "gb200").update(arch="hopper"))
    assert 'product "gb200"' in problem and "sm_100 is arch blackwell in arch_tokens" in problem


def test_bad_table_store_arch_under_the_wrong_vendor(tmp_path):
    def mutate(doc):
        doc["arch_tokens"].append({"vendor": "amd", "arch": "hopper", "tokens": ["hopper9"]})

    problem = load_mutated(tmp_path, mutate)
    assert "(arch hopper): arch hopper is nvidia, not amd" in problem


def test_bad_table_arch_token_used_as_alias(tmp_path):
    problem = load_mutated(tmp_path, lambda d: entry(d, "h100")["aliases"].append("sm_90"))
    assert '"sm_90" is an arch token' in problem


def test_bad_table_duplicate_product(tmp_path):
    def mutate(doc):
        doc["products"].append({**entry(doc, "l4"), "aliases": []})

    assert "duplicate product key" in load_mutated(tmp_path, mutate)


def test_bad_table_not_yaml_or_missing(tmp_path):
    path = tmp_path / "targets.yaml"
    path.write_text("products: [\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML at line"):
        HardwareTable.load(path)
    with pytest.raises(InputError, match="hardware table not found"):
        HardwareTable.load(tmp_path / "absent.yaml")
    path.write_text("- a list\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"table: .* is not of type 'object'"):
        HardwareTable.load(path)


def _table_mutations():
    """(name, table) pairs: each schema rule broken once, plus the shipped table itself."""

    def nvidia():
        return next(i for i, e in enumerate(TABLE_DOC["products"]) if e["vendor"] == "nvidia")

    def amd():
        return next(i for i, e in enumerate(TABLE_DOC["products"]) if e["vendor"] == "amd")

    edits = {
        "shipped": lambda d: None,
        "extra top key": lambda d: d.update(extra=1),
        "no products": lambda d: d.pop("products"),
        "empty products (minItems)": lambda d: d.update(products=[]),
        "empty arch_tokens (minItems)": lambda d: d.update(arch_tokens=[]),
        "empty tokens (minItems)": lambda d: d["arch_tokens"][0].update(tokens=[]),
        "alias of 101 characters (maxLength)": lambda d: d["products"][0]["aliases"].append("x" * 101),
        "alias of 100 characters": lambda d: d["products"][0]["aliases"].append("y" * 100),
        "empty alias (minLength)": lambda d: d["products"][0]["aliases"].append(""),
        "alias without a letter or digit": lambda d: d["products"][0]["aliases"].append("--"),
        "product named any (not)": lambda d: d["products"][0].update(product="any"),
        "uppercase product": lambda d: d["products"][0].update(product="H100"),
        "cc on an AMD part (false schema)": lambda d: d["products"][amd()].update(cc="sm_90"),
        "gfx on an NVIDIA part (false schema)": lambda d: d["products"][nvidia()].update(gfx="gfx942"),
        "NVIDIA part without cc (if/then)": lambda d: d["products"][nvidia()].pop("cc"),
        "bad cc pattern": lambda d: d["products"][nvidia()].update(cc="sm_9"),
        "unknown vendor": lambda d: d["products"][0].update(vendor="intel"),
        "unknown arch": lambda d: d["arch_tokens"][0].update(arch="pascal"),
        "aliases not a list": lambda d: d["products"][0].update(aliases="h100"),
        "token a number": lambda d: d["arch_tokens"][0]["tokens"].append(90),
        "table a list": lambda d: d.clear(),
    }
    for name, edit in edits.items():
        doc = copy.deepcopy(TABLE_DOC)
        edit(doc)
        yield name, ([] if name == "table a list" else doc)


def test_compiled_table_check_agrees_with_jsonschema():
    """Loading a table asks the compiled validator whether it is valid and imports jsonschema only to
    describe a failure: both must give the same verdict on every rule of the schema."""
    import jsonschema

    from optrace.ingest.hardware import _targets_check, _targets_schema

    check, reference = _targets_check(), jsonschema.Draft202012Validator(_targets_schema())
    verdicts = {}
    for name, doc in _table_mutations():
        verdicts[name] = reference.is_valid(doc)
        assert (not check(doc)) == verdicts[name], name
    assert verdicts["shipped"] and verdicts["alias of 100 characters"]
    assert sum(not v for v in verdicts.values()) == len(verdicts) - 2


def test_a_valid_table_loads_without_importing_jsonschema():
    import subprocess
    import sys

    code = (
        "import sys\nfrom optrace.ingest.hardware import HardwareTable\n"
        "HardwareTable.load()\nprint('jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
