"""The BLAS report and the self-check's stale-kernel warning, on made-up inputs.

Nothing here depends on this machine's processor, its OpenBLAS or its environment
(OPENBLAS_CORETYPE is never set or unset here: the environments are plain dicts).
"""

from __future__ import annotations

import pytest

from tinyattn.bench import _blas_report as report
from tinyattn.bench import _harness

SKX_FEATURES = {"SSE2": True, "AVX": True, "AVX2": True, "FMA3": True, "AVX512_SKX": True}
AVX2_FEATURES = dict(SKX_FEATURES, AVX512_SKX=False)
SKX_FLAGS = "fpu sse2 avx avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl".split()


@pytest.mark.parametrize(
    "features, flags, tier",
    [
        (SKX_FEATURES, None, 4),
        (AVX2_FEATURES, None, 3),
        (dict(AVX2_FEATURES, FMA3=False), None, 2),
        ({"SSE2": True}, None, 1),
        ({}, None, 0),
        (None, SKX_FLAGS, 4),
        (None, [f for f in SKX_FLAGS if f != "avx512vl"], 3),  # Knights Landing-like: no VL
        (None, ["sse2", "avx"], 2),
        (None, [], 0),
    ],
)
def test_cpu_tier_from_numpy_features_or_cpuinfo_flags(features, flags, tier):
    assert report.cpu_tier(features, flags) == tier


def test_cpuinfo_flags_are_read_from_the_flags_line(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nmodel name\t: X\nflags\t\t: fpu avx2 fma\nbugs\t: none\n")
    assert report._cpuinfo_flags(str(path)) == {"fpu", "avx2", "fma"}
    assert report._cpuinfo_flags(str(tmp_path / "missing")) == set()


@pytest.mark.parametrize(
    "core, tier",
    [("SkylakeX", 4), ("COOPERLAKE", 4), ("Haswell", 3), ("Zen", 3), ("Sandybridge", 2)]
    + [("Nehalem", 1), ("NeoverseN1", None), (None, None), ("", None)],
)
def test_core_tier(core, tier):
    assert report.core_tier(core) == tier


def test_forced_haswell_on_an_avx512_processor_warns_and_names_the_variable():
    env = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "1048576"}
    text = report.stale_core_warning("Haswell", 4, env)
    assert text is not None
    assert "Haswell kernels (AVX2)" in text and "supports AVX-512" in text
    assert "256-bit vectors where the processor has 512-bit ones" in text
    assert "OPENBLAS_CORETYPE=Haswell" in text
    assert "unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE" in text


def test_old_kernels_without_the_variable_warn_without_blaming_it():
    text = report.stale_core_warning("Sandybridge", 3, {})
    assert text is not None and "fused instruction (FMA)" in text
    assert "OPENBLAS_CORETYPE" not in text


@pytest.mark.parametrize(
    "core, cpu",
    [("SkylakeX", 4), ("Haswell", 3), ("Zen", 3), ("NeoverseN1", 4), ("Haswell", 0)],
)
def test_no_warning_when_the_kernels_fit_the_processor_or_either_is_unknown(core, cpu):
    assert report.stale_core_warning(core, cpu, {"OPENBLAS_CORETYPE": core}) is None


def test_numpy_blas_summary_line_and_first_warning():
    libs = [
        dict(internal_api="openblas", version="0.3.31", architecture="Haswell", num_threads=4),
        dict(internal_api="openblas", version="0.3.20", architecture="SkylakeX", num_threads=2),
    ]
    line, warning = report.numpy_blas_summary(libs, 4, {})
    assert line == (
        "openblas 0.3.31, Haswell kernels, 4 threads; openblas 0.3.20, SkylakeX kernels, 2 threads"
    )
    assert warning is not None and warning.startswith("NumPy's OpenBLAS runs its Haswell")
    assert report.numpy_blas_summary([], 4, {}) == ("not found", None)


def test_ctypes_fallback_reads_this_process_openblas():
    """Without threadpoolctl the libraries mapped into the process are asked directly; where
    NumPy links no OpenBLAS (another BLAS, no /proc) the list is empty, not an error."""
    libs = report.numpy_blas_report(use_threadpoolctl=False)
    for info in libs:
        assert info["source"] == "ctypes" and info["internal_api"] == "openblas"
        assert info["architecture"] and info["num_threads"] >= 1
    assert report.openblas_via_ctypes("/nonexistent/libopenblas.so") is None


def test_child_env_removes_both_variables_or_forces_the_override():
    base = {"PATH": "/bin", "OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "1048576"}
    assert _harness.child_env(base) == {"PATH": "/bin"}
    assert _harness.child_env(base, "SkylakeX") == {"PATH": "/bin", "OPENBLAS_CORETYPE": "SkylakeX"}
    assert base["OPENBLAS_CORETYPE"] == "Haswell"  # the caller's mapping is left alone


def test_kernel_note_says_which_kernel_and_what_the_shell_had():
    shell = {"OPENBLAS_CORETYPE": "Haswell"}
    assert (
        _harness.kernel_note(None, {}) == "detected: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
    )
    assert _harness.kernel_note("Haswell", shell) == (
        "forced: OPENBLAS_CORETYPE=Haswell (this shell has OPENBLAS_CORETYPE=Haswell)"
    )


def test_format_blas_lines():
    blas = {
        "tinyattn": [dict(internal_api="openblas", version="0.3", architecture="X", num_threads=2)],
        "torch": dict(blas="mkl", version="MKL 2024.2", cpu_capability="AVX512", num_threads=2),
    }
    assert _harness.format_blas(blas).splitlines() == [
        "- tinyattn: openblas 0.3, X kernels, 2 threads",
        "- torch: mkl (MKL 2024.2), CPU capability AVX512, 2 threads",
    ]


def test_self_check_prints_the_blas_and_warns_on_stale_kernels(capsys):
    from tinyattn.__main__ import print_blas

    haswell = [dict(internal_api="openblas", version="0.3", architecture="Haswell", num_threads=2)]
    print_blas(haswell, cpu=4, env={"OPENBLAS_CORETYPE": "Haswell"})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "blas     openblas 0.3, Haswell kernels, 2 threads (NumPy's matrix products)"
    assert out[1].startswith("WARNING: NumPy's OpenBLAS runs its Haswell kernels")
    assert any("OPENBLAS_CORETYPE=Haswell in the environment" in line for line in out)
    print_blas(haswell, cpu=3, env={})
    assert capsys.readouterr().out.count("\n") == 1  # the blas line alone: no warning
