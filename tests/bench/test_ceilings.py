"""benchmarks/ceilings.py: the floor each goal case's products set (the verdicts, and a
quick run of the script when torch is installed)."""

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "ceilings.py"


@pytest.fixture(scope="module")
def ceilings():
    spec = importlib.util.spec_from_file_location("ceilings", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rounds(products_ms: float, case_ms: float, names) -> list[dict]:
    numpy = {name: {"products ms": products_ms} for name in names}
    torch = {name: {"products ms": 1.0, "case ms": case_ms} for name in names}
    return [{"numpy": numpy, "torch": torch}]


def test_floor_is_numpy_products_over_torch_case(ceilings):
    names = list(ceilings.cases(quick=True))  # goals 0.70 (step), 0.60 (MHA), 0.43 (decode)
    rows = ceilings.table(_rounds(50.0, 100.0, names), quick=True).splitlines()[2:]
    step, mha, decode = (row.split("|")[1:-1] for row in rows)
    assert step[4].strip() == "0.50x" and step[6].strip() == "yes"
    assert mha[6].strip() == "yes" and decode[6].strip() == "no"


def test_gpt_products_follow_the_layer_shapes(ceilings):
    products = ceilings._gpt_products(rows=4, d=8, n_layer=2, vocab=11)
    assert products == [(4, 8, 24), (4, 8, 8), (4, 8, 32), (4, 32, 8)] * 2 + [(4, 8, 11)]


def test_quick_run_against_torch(ceilings, capsys):
    pytest.importorskip("torch", reason="the torch column needs torch (a test extra)")
    text = ceilings.main(["--quick", "--rounds", "1", "--repeats", "2"])
    assert "| GPT step tiny |" in text and "| decode tiny |" in text
    assert "| MHA (2, 16, 32) need_weights=False |" in text
    assert "NumPy's BLAS:" in capsys.readouterr().out
