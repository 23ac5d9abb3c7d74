"""optrace.ingest.ncu: kernel-name normalisation, harness detection and the tolerant `ncu --csv` reader."""

import pytest

from optrace.ingest.ncu import NcuKernel, is_harness_kernel, normalize_kernel_name, parse_ncu_csv, parse_number
from tests.support.paths import FIXTURES, ROOT

FIXTURES = FIXTURES / "ncu"
REAL_LOG = ROOT.parent / "shared" / "data" / "samples" / "ncu_csv_details_sm100_superbench.log"
RNG = "distribution_elementwise_grid_stride_kernel"
NON_TARGET = [RNG]

# The torch RNG fill in the three spellings seen in real ncu / nsys output (trace-format.md §8).
RNG_DEMANGLED = (
    "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, "
    "at::native::templates::cuda::normal_and_transform<float, float, at::CUDAGeneratorImpl *, "
    "at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, "
    "double, at::CUDAGeneratorImpl *)::[lambda() (instance 1)]::operator ()() const::"
    "[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3)::[lambda(int, float4) (instance 1)]>"
    "(long, at::PhiloxCudaState, T3, T4)"
)
RNG_NSYS = (
    "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, "
    "at::native::<unnamed>::distribution_nullary_kernel<float, float, float4>>(long, at::PhiloxCudaState)"
)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# --- normalize_kernel_name: each step, in order ---------------------------------------------------


@pytest.mark.parametrize("spelling", [RNG, RNG_DEMANGLED, RNG_NSYS])
def test_all_rng_spellings_normalise_to_the_base_name(spelling):
    assert normalize_kernel_name(spelling) == RNG


def test_triton_bare_name_is_unchanged():
    assert normalize_kernel_name("_fused_softmax_kernel") == "_fused_softmax_kernel"
    assert normalize_kernel_name("  _gemm_gate_up_kernel\n") == "_gemm_gate_up_kernel"


def test_leading_void_is_dropped_only_as_a_word():
    assert normalize_kernel_name("void gemm_kernel") == "gemm_kernel"
    assert normalize_kernel_name("voidify_kernel") == "voidify_kernel"


def test_anonymous_scopes_are_removed_before_the_paren_cut():
    # A naive split on "(" would leave "ns" here: the anonymous scope must go first.
    assert normalize_kernel_name("ns::(anonymous namespace)::k") == "k"
    assert normalize_kernel_name("ns::<unnamed>::k") == "k"


def test_nested_template_arguments_are_cut_whole():
    assert normalize_kernel_name("a::k<float, b::c<int, 4>, d<e<f>>>") == "k"
    # "(" inside template arguments does not cut the name.
    assert normalize_kernel_name("k<void (*)(int)>(int)") == "k"


def test_cut_at_first_paren_after_templates():
    assert normalize_kernel_name("void softmax_kernel(float const*, float*, int)") == "softmax_kernel"


def test_last_scope_component_is_kept():
    assert normalize_kernel_name("cutlass::device_kernel<cutlass::gemm::GemmUniversal<T>>(P)") == "device_kernel"
    assert normalize_kernel_name("at::native::reduce_kernel<512, 1>(R)") == "reduce_kernel"


def test_unclosed_template_drops_the_rest():
    assert normalize_kernel_name("k<float, (int)4") == "k"


# --- is_harness_kernel ------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", [RNG, RNG_DEMANGLED, RNG_NSYS])
def test_every_rng_spelling_is_a_harness_kernel(spelling):
    assert is_harness_kernel(spelling, NON_TARGET)


def test_non_target_list_is_normalised_too():
    assert is_harness_kernel(RNG, [RNG_NSYS])


def test_decorated_spelling_matches_by_substring():
    mangled = "_ZN2at6native43distribution_elementwise_grid_stride_kernelIfLi4EEEvlNS_15PhiloxCudaStateE"
    assert is_harness_kernel(mangled, NON_TARGET)


def test_target_kernels_are_not_harness():
    assert not is_harness_kernel("_fused_softmax_kernel", NON_TARGET)
    assert not is_harness_kernel("cutlass3x_sm100_tensorop_gemm", NON_TARGET)
    assert not is_harness_kernel(RNG, [])
    assert not is_harness_kernel(RNG, [""])  # an empty entry must not match everything


# --- parse_number -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell, value",
    [
        ("406240", 406240.0),
        ("3995313115.40", 3995313115.40),
        ("1.5e3", 1500.0),
        ("1,215,000,000.00", 1215000000.0),
        ("1,215.50", 1215.5),
    ],
)
def test_numbers_that_are_unambiguous_parse(cell, value):
    assert parse_number(cell) == value


@pytest.mark.parametrize(
    "cell", ["1,215", "5,120", "1.215.000,00", "406,24", "12,34.5", "CachePreferNone", "", "nan", "inf"]
)
def test_ambiguous_or_non_numeric_cells_stay_unparsed(cell):
    assert parse_number(cell) is None


# --- parse_ncu_csv ----------------------------------------------------------------------------------


def test_details_page_after_preamble_with_ragged_rows():
    table = parse_ncu_csv(fixture("details_20col_preamble.log"))
    assert table.reason is None
    # Two launches of the same kernel: one entry per ncu ID, in launch order.
    assert table.kernels == (
        NcuKernel("_fused_softmax_kernel", 35.2),
        NcuKernel("_fused_softmax_kernel", 1215.5),  # `1,215.50 usecond`: grouped with a dot decimal
    )


def test_old_15_column_header():
    table = parse_ncu_csv(fixture("old_15col.csv"))
    assert table.kernels == (NcuKernel("matmul_kernel", 1250.0),)  # 1.25 msecond


def test_metrics_form_reads_gpu_time_duration_sum():
    table = parse_ncu_csv(fixture("metrics_form.csv"))
    assert [k.name for k in table.kernels] == [RNG, "_gemm_gate_up_kernel"]
    # `5,120` could be 5.12 in a European locale: left unparsed rather than guessed.
    assert table.kernels[0].duration_us is None
    assert table.kernels[1].duration_us == 41.6  # 41600 nsecond


def test_raw_page_takes_the_unit_from_the_units_row():
    table = parse_ncu_csv(fixture("raw_page.csv"))
    assert table.kernels == (
        NcuKernel(RNG, 4.16),
        NcuKernel("_gemm_gate_up_kernel", 41.6),
        NcuKernel("_gemm_gate_up_kernel", 41.92),
    )


def test_raw_page_without_units_row_assumes_ns():
    text = '"ID","Kernel Name","gpu__time_duration.sum"\n"0","k","2500"\n'
    assert parse_ncu_csv(text).kernels == (NcuKernel("k", 2.5),)


def test_rng_then_target_keeps_both_launches_in_order():
    table = parse_ncu_csv(fixture("rng_then_target.csv"))
    assert [normalize_kernel_name(k.name) for k in table.kernels] == [RNG, "_fused_softmax_kernel"]
    assert table.kernels[0].name.startswith("void at::native::(anonymous namespace)::")
    assert [k.duration_us for k in table.kernels] == [4.16, 35.2]


def test_garbage_without_header_gives_empty_table_and_reason():
    table = parse_ncu_csv(fixture("no_header.log"))
    assert table.kernels == ()
    assert "no ncu CSV header" in table.reason


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "no ncu CSV header"),
        ("\x00\x01\xff binary", "no ncu CSV header"),
        ('"ID","Name"\n"0","x"\n', "no Kernel Name column"),
        ('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n', "no kernel rows"),
    ],
)
def test_odd_input_never_raises(text, reason):
    table = parse_ncu_csv(text)
    assert table.kernels == ()
    assert reason in table.reason


def test_duration_in_unknown_unit_or_non_number_is_none():
    head = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    text = head + '"0","k","Duration","fortnight","3"\n"1","k","Duration","ns","n/a"\n'
    assert parse_ncu_csv(text).kernels == (NcuKernel("k", None), NcuKernel("k", None))


def test_real_superbench_log():
    if not REAL_LOG.is_file():
        pytest.skip(f"real sample not present: {REAL_LOG}")
    table = parse_ncu_csv(REAL_LOG.read_text(encoding="utf-8"))
    assert table.reason is None
    assert table.kernels == (
        NcuKernel(
            "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_f16_relu_aux_scalemax",
            406.24,  # Duration 406240 ns
        ),
    )
