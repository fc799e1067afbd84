"""The layers of tinyattn, bottom to top: the one table of the architecture.

A module may import its own layer and the layers below it, so a reader can start at the
bottom and never meet a name that is not yet explained. ``tests/test_layering.py`` checks
every import against this table and ``docs/architecture.md`` shows it (a test checks that
the document's table is :func:`markdown_table`; ``python -m tinyattn.foundations.layers`` prints it).

Modules are named by their dotted path below ``tinyattn``; the longest listed prefix of a
module's path gives its layer, and a module listed nowhere is in the top layer.
"""

from __future__ import annotations

# (layer, name, modules, what it is, what it may import)
TABLE: tuple[tuple[int, str, tuple[str, ...], str, str], ...] = (
    (
        0,
        "core and foundations",
        (
            "core",
            "random",
            "_version",
            "foundations",
            "shims.distributed",
            "torch_surface.out_table",
        ),  # fmt: skip
        "`core/`: `TensorBase` (a tensor's autograd fields) and `TensorBase._make` (how ops "
        "make tensors), the op base `Function` (on arrays) and `Node`, the backward engine "
        "and its one extension seam, grad mode, dtypes and promotion, `numpy_xp`, the CPU "
        "device and `Size`; the RNG (`random/`), this table, how messages name a type, the "
        "malloc settings, the no-op `distributed` shim, the names that take `out=` (data)",
        "NumPy (`core/` imports only itself)",
    ),
    (
        1,
        "kernels",
        ("kernels",),
        "the numba attention, GELU, LayerNorm, pooling and Adam kernels and their NumPy "
        "twins; the one softmax formula; BLAS matrix products; the SDPA path switches",
        "layer 0, NumPy, numba (lazily)",
    ),
    (
        2,
        "ops",
        ("ops",),
        "one `Function` per op, by family (`ops/elementwise`, `reduce`, `shape`, `index`, "
        "`linalg`, `creation`, `random`, `special`, `sorting`, `windows`): forward and "
        "backward side by side; they make and recognise tensors as `TensorBase`",
        "layers 0-1",
    ),
    (
        3,
        "autograd",
        ("autograd",),
        "what plugs into the core's seam: torch's user-level `autograd.Function`, "
        "`autograd.graph` hooks, anomaly mode, forward AD, gradcheck, the trace, `tensor_xp` "
        "(the namespace of create_graph formulas, built from the ops), `autograd.functional`",
        "layers 0-2",
    ),
    (
        4,
        "torch surface",
        ("torch_surface",),
        "adapters that only add torch's names: aliases, top-level in-place and `*_copy` "
        "forms, the `out=` wrapper, legacy names and types, switches, queries, DLPack, and "
        "the Tensor's long-tail methods (`tensor_inplace.py`, `tensor_longtail.py`)",
        "layers 0-3",
    ),
    (
        5,
        "tensor",
        ("tensor_api",),
        "`Tensor` = `TensorBase` + the API; every method forwards to an op",
        "layers 0-4",
    ),
    (
        6,
        "torch namespaces",
        ("linalg", "fft", "special"),
        "`torch.linalg`, `torch.fft`, `torch.special`: the names of those namespaces over "
        "the ops, with `out=`",
        "layers 0-5",
    ),
    (
        7,
        "shims",
        ("shims",),
        "the CPU stand-ins for cuda, backends, amp, distributed, onnx, accelerator, compile, "
        "and the einops backend",
        "layers 0-6",
    ),
    (
        8,
        "nn",
        ("nn",),
        "`nn/functional/` (one file per concept, with torch's top-level ATen forms of the "
        "functional ops in `aten_forms.py` and `native.py`), `nn/modules/`, `nn/attention/`, "
        "`nn/init.py`: layers, losses, attention",
        "layers 0-7",
    ),
)
TOP = 9
TOP_ROW = (
    TOP,
    "the rest",
    (
        "optim",
        "utils",
        "io",
        "models",
        "sparse",
        "func",
        "distributions",
        "nested",
        "profiler",
        "explain",
        "viz",
        "bench",
        "demo",
    ),
    "training, data, checkpoints and weight files, sparse COO tensors, `torch.func`, "
    "distributions, nested tensors, the profiler, teaching tools",
    "anything below",
)

# module (dotted below ``tinyattn``) -> layer
LAYERS: dict[str, int] = {module: row[0] for row in TABLE for module in row[2]}

# Imports that reach up on purpose, each with its reason: (importer, imported) prefixes.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("autograd.xp", "tinyattn"): "tensor_xp's formulas call the Tensor's ops at call time",
    ("autograd.functional", "tinyattn"): "jacobian/hessian/... make the Tensor's zeros_like "
    "and ones_like at call time",
    ("torch_surface.tensor_inplace", "tinyattn"): "Tensor.hardshrink / prelu call the "
    "functional forms of nn at call time",
    ("torch_surface.tensor_longtail", "tinyattn"): "Tensor.to_sparse builds a sparse tensor "
    "at call time",
    ("tensor_api", "tinyattn"): "the generated methods and repr reach the ops and nn "
    "through the package namespace at call time",
    ("shims.einops", "tinyattn"): "einops's backend for tinyattn holds the package",
}
# Files that may import anything, each with its reason (none today: ALLOWED_UPWARD names
# each import that reaches up).
ALLOWED_FILES: dict[str, str] = {}


def layer(module: str) -> int:
    """The layer of ``module`` (dotted below ``tinyattn``): that of its longest listed prefix."""
    keys = [k for k in LAYERS if module == k or module.startswith(k + ".")]
    return LAYERS[max(keys, key=len)] if keys else TOP


def _cell(modules: tuple[str, ...]) -> str:
    return ", ".join(f"`{m}`" for m in modules)


def markdown_table() -> str:
    """The layer table as docs/architecture.md shows it (Markdown)."""
    lines = ["| layer | modules | what it is | may import |", "|---|---|---|---|"]
    for number, name, modules, what, imports in (*TABLE, TOP_ROW):
        lines.append(f"| {number}. {name} | {_cell(modules)} | {what} | {imports} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
