"""Small calls of corpus names on float64 inputs that require grad.

``probe(lib, name)`` calls the object a corpus name resolves to (``lib`` is torch or
tinyattn) the way the corpus does, on float64 tensors with ``requires_grad``, and
returns its outputs. ``probe_functions(name)`` returns the names of the autograd
``Function`` classes in tinyattn's graph of those outputs: the name is
differentiable when that set is not empty, and then its Functions must be
gradchecked and parity-tested (``tests/harness.py``).

A name that is not a callable working on tensors (a dtype, a constant, a module
flag, a data loader, an optimizer...) is listed in ``NOT_ON_TENSORS`` with no
probe; a callable returning no float tensor gives ``None``.
"""

from __future__ import annotations

import numpy as np

# name -> (args after the tensor input, kwargs); the input is x of shape (3, 4).
ARGS: dict[str, tuple[tuple, dict]] = {
    "Tensor.add": ((1.0,), {}),
    "Tensor.add_": ((1.0,), {}),
    "Tensor.sub": ((1.0,), {}),
    "Tensor.div": ((2.0,), {}),
    "Tensor.maximum": (("x",), {}),
    "Tensor.copy_": (("x",), {}),
    "Tensor.dot": (("row",), {}),
    "Tensor.chunk": ((2, 1), {}),
    "Tensor.split": ((2,), {"dim": 1}),
    "Tensor.expand": ((2, 3, 4), {}),
    "Tensor.repeat": ((2, 1), {}),
    "Tensor.narrow": ((1, 0, 2), {}),
    "Tensor.permute": ((1, 0), {}),
    "Tensor.transpose": ((0, 1), {}),
    "Tensor.view": ((12,), {}),
    "Tensor.reshape": ((4, 3), {}),
    "Tensor.unsqueeze": ((0,), {}),
    "Tensor.flip": ((0,), {}),
    "Tensor.masked_fill": (("mask", 0.0), {}),
    "Tensor.masked_fill_": (("mask", 0.0), {}),
    "Tensor.masked_select": (("mask",), {}),
    "Tensor.index_fill_": ((1, "idx3", 0.0), {}),
    "Tensor.scatter": ((1, "idx2", 0.5), {}),
    "Tensor.scatter_": ((1, "idx2", 0.5), {}),
    "Tensor.fill_": ((0.5,), {}),
    "Tensor.softmax": ((-1,), {}),
    "Tensor.topk": ((2,), {}),
    "Tensor.type_as": (("x32",), {}),
    "Tensor.to": (("float32",), {}),
    "Tensor.type": (("float32",), {}),
    "Tensor.eq": (("x",), {}),
    "Tensor.ne": (("x",), {}),
    "Tensor.new_zeros": (((2,),), {}),
    "Tensor.requires_grad_": ((), {}),
    "torch.matmul": (("xT",), {}),
    "torch.bmm": (("b2",), {}),
    "torch.dot": (("row",), {}),
    "torch.pow": ((2.0,), {}),
    "torch.cat": ((), {"dim": 0}),
    "torch.stack": ((), {"dim": 0}),
    "torch.where": (("x", 0.0), {}),
    "torch.topk": ((2,), {}),
    "torch.repeat_interleave": ((2,), {"dim": 0}),
    "torch.softmax": ((-1,), {}),
    "torch.triu": ((1,), {}),
    "torch.tril": ((0,), {}),
    "torch.unsqueeze": ((0,), {}),
    "torch.nn.functional.softmax": ((), {"dim": -1}),
    "torch.nn.functional.log_softmax": ((), {"dim": -1}),
    "torch.nn.functional.layer_norm": (((4,),), {}),
    "torch.nn.functional.pad": (((1, 1),), {}),
    "torch.nn.functional.cross_entropy": (("target",), {}),
    "torch.nn.functional.scaled_dot_product_attention": (("q", "q"), {}),
    "torch.nn.utils.rnn.pack_padded_sequence": (([5, 3],), {}),
    "Tensor.bmm": (("b2",), {}),
    "Tensor.expand_as": (("row1",), {}),
    "Tensor.matmul": (("xT",), {}),
    "Tensor.pow": ((2.0,), {}),
    "Tensor.swapaxes": ((0, 1), {}),
    "torch.gather": ((1, "idx2"), {}),
    "torch.gt": (("x",), {}),
    "torch.roll": ((1,), {"dims": 0}),
    "Tensor.cumsum": ((1,), {}),
    "Tensor.repeat_interleave": ((2,), {"dim": 0}),
    "torch.einsum": (("x", "x"), {}),
    "torch.equal": (("x",), {}),
    "torch.outer": (("row",), {}),
    "torch.nn.functional.mse_loss": (("x",), {}),
    "torch.nn.attention.flex_attention.flex_attention": (("q", "q"), {}),
    # (names of the pytorch/tutorials programs)
    "Tensor.equal": (("x",), {}),
    "Tensor.movedim": ((0, 1), {}),
    "Tensor.mul": ((2.0,), {}),
    "Tensor.mul_": ((2.0,), {}),
    "Tensor.unsqueeze_": ((0,), {}),
    "torch.allclose": (("x",), {}),
    "torch.bitwise_xor": (("idx",), {}),
    "torch.clamp": ((), {"min": 0.0}),
    "torch.cross": (("x",), {"dim": 0}),
    "torch.eq": (("x",), {}),
    "torch.mul": ((2.0,), {}),
    "torch.reshape": (((4, 3),), {}),
    "torch.nn.functional.binary_cross_entropy_with_logits": (("x",), {}),
    "torch.nn.functional.linear": (("x",), {}),
    "torch.nn.functional.max_pool2d": ((2,), {}),
    "torch.nn.functional.nll_loss": (("target",), {}),
    # (names of the programs that grew the corpus: graphs, state spaces, Perceiver, BERT ...)
    "Tensor.clamp": ((), {"min": 0.0}),
    "Tensor.clamp_": ((), {"min": 0.0}),
    "Tensor.gather": ((1, "idx2"), {}),
    "Tensor.index_add": ((1, "idx3", "col2"), {}),
    "Tensor.index_copy_": ((1, "idx3", "col2"), {}),
    "Tensor.index_select": ((1, "idx3"), {}),
    "Tensor.mm": (("xT",), {}),
    "Tensor.multiply": ((2.0,), {}),
    "Tensor.new_tensor": (([1.0, 2.0],), {}),
    "Tensor.view_as": (("x",), {}),
    "Tensor.where": (("mask", 0.0), {}),
    "torch.chunk": ((2, 1), {}),
    "torch.cumprod": ((1,), {}),
    "torch.div": ((2.0,), {}),
    "torch.ger": (("row",), {}),
    "torch.mm": (("xT",), {}),
    "torch.split": ((2,), {"dim": 1}),
    "torch.distributions.normal.Normal": (("p",), {}),
}
PROPERTIES = {"T", "mT", "H", "mH", "real", "imag"}
# Tensor arguments: the first element selects the input, the rest the first argument.
INPUT_OF = {
    "torch.cat": "pair",
    "torch.stack": "pair",
    "torch.where": "mask",
    "torch.bmm": "b1",
    "torch.dot": "row",
    "Tensor.dot": "row",
    "torch.nn.functional.scaled_dot_product_attention": "q",
    "Tensor.expand": "row1",
    "torch.nn.utils.rnn.pad_sequence": "pair",
    "torch.nn.utils.rnn.pack_padded_sequence": "seq",
    "Tensor.bmm": "b1",
    "torch.nn.utils.rnn.pad_packed_sequence": "packed",
    "torch.einsum": "equation",
    "torch.outer": "row",
    "torch.nn.attention.flex_attention.flex_attention": "q",
    "torch.bitwise_xor": "idx",
    "torch.nn.functional.max_pool2d": "img",
    "torch.ger": "row",
    "torch.distributions.normal.Normal": "p",
}
# Module classes: (constructor args, input).
MODULES: dict[str, tuple[tuple, dict, str]] = {
    "torch.nn.Linear": ((4, 2), {}, "x"),
    "torch.nn.LazyLinear": ((2,), {}, "x"),
    "torch.nn.Embedding": ((5, 3), {}, "idx"),
    "torch.nn.LayerNorm": ((4,), {}, "x"),
    "torch.nn.Dropout": ((0.5,), {}, "x"),
    "torch.nn.GELU": ((), {}, "x"),
    "torch.nn.ReLU": ((), {}, "x"),
    "torch.nn.Tanh": ((), {}, "x"),
    "torch.nn.Identity": ((), {}, "x"),
    "torch.nn.Softmax": ((), {"dim": -1}, "x"),
    "torch.nn.Sequential": ((), {}, "x"),
    "torch.nn.GRU": ((4, 3), {}, "seq"),
    "torch.nn.RNN": ((4, 3), {}, "seq"),
    "torch.nn.LSTM": ((4, 3), {}, "seq"),
    "torch.nn.Conv1d": ((2, 3, 2), {}, "seq"),
    "torch.nn.LogSoftmax": ((), {"dim": -1}, "x"),
    "torch.nn.CrossEntropyLoss": ((), {}, "x,target"),
    "torch.nn.NLLLoss": ((), {}, "x,target"),
    "torch.nn.KLDivLoss": ((), {"reduction": "batchmean"}, "x,x"),
    "torch.nn.LazyBatchNorm1d": ((), {}, "x"),
    "torch.nn.LazyConv2d": ((2, 3), {}, "img"),
    "torch.nn.Transformer": (
        (),
        {
            "d_model": 4,
            "nhead": 2,
            "num_encoder_layers": 1,
            "num_decoder_layers": 1,
            "dim_feedforward": 8,
            "dropout": 0.0,
        },
        "seq4,seq4",
    ),  # fmt: skip
    "torch.nn.TransformerEncoderLayer": ((4, 2, 8, 0.0), {}, "seq4"),
    "torch.nn.MultiheadAttention": ((4, 2), {}, "seq4,seq4,seq4"),
    "torch.nn.RMSNorm": ((4,), {}, "x"),
    "torch.nn.Sigmoid": ((), {}, "x"),
    "torch.nn.SiLU": ((), {}, "x"),
    "einops.layers.torch.Rearrange": (("a b -> b a",), {}, "x"),
    "torch.nn.BatchNorm1d": ((4,), {}, "x"),
    "torch.nn.Conv2d": ((1, 2, 3), {}, "img"),
    "torch.nn.GroupNorm": ((2, 4), {}, "x"),
    "torch.nn.MSELoss": ((), {}, "x,x"),
}
# Corpus names that are not callables computing on tensors: nothing to differentiate.
NOT_ON_TENSORS = {
    "torch.__version__", "torch.Tensor", "torch.Generator", "torch.device", "torch.inf",
    "torch.pi", "torch.bfloat16", "torch.float", "torch.float16", "torch.float32",
    "torch.int64", "torch.long", "torch.uint8", "torch.ByteTensor", "torch.FloatTensor",
    "torch.LongTensor", "torch.manual_seed", "torch.no_grad", "torch.save", "torch.load",
    "torch.compile", "torch.amp.autocast", "torch.onnx", "torch.nn", "torch.nn.functional",
    "torch.optim", "torch.distributed", "torch.multiprocessing",
    "torch.nn.Module", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Parameter",
    "torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
    "torch.nn.Embedding.from_pretrained", "torch.inference_mode", "Tensor.is_cuda",
    "torch.optim.Adam", "torch.optim.AdamW", "torch.optim.Optimizer",
    "torch.optim.Optimizer.param_groups", "torch.optim.Optimizer.step",
    "torch.optim.lr_scheduler.LambdaLR", "torch.optim.lr_scheduler.ReduceLROnPlateau",
    "torch.optim.lr_scheduler.LRScheduler.get_last_lr",
    "torch.serialization.safe_globals",
    "Tensor.backward", "Tensor.grad", "Tensor.data", "Tensor.device", "Tensor.dtype",
    "Tensor.shape", "Tensor.requires_grad", "Tensor.size", "Tensor.dim", "Tensor.numel",
    "Tensor.nelement", "Tensor.item", "Tensor.tolist", "Tensor.numpy", "Tensor.cpu",
    "Tensor.cuda", "Tensor.pin_memory", "Tensor.zero_", "Tensor.all", "Tensor.bool",
    "Tensor.long", "Tensor.argmax", "Tensor.sort", "Tensor.detach",
    "Tensor.ndim", "torch.bool", "torch.int", "torch.finfo", "torch.has_mps",
    "torch.set_float32_matmul_precision", "torch.nn.attention.flex_attention.create_block_mask",
    "Tensor.grad_fn", "Tensor.register_hook", "torch.double", "torch.float64", "torch.int16",
    "torch.int32", "torch.autograd.Function", "torch.autograd.grad", "torch.autograd.gradgradcheck",
    "torch.nested.nested_tensor", "torch.autograd.backward", "torch.autograd.function.Function",
    "torch.enable_grad", "torch.get_rng_state", "torch.set_rng_state", "torch.nn.ParameterList",
    "torch.nn.init", "torch.version.cuda", "torch.utils.checkpoint.set_device_states",
    # resize_ refuses a tensor that requires grad (in torch and here): nothing to differentiate
    "Tensor.resize_",
}  # fmt: skip
NOT_ON_TENSORS_PREFIXES = (
    "torch.cuda.", "torch.backends.", "torch.accelerator.", "torch.distributed.",
    "torch.utils.data.", "torch.nn.Module.", "torch.nn.init.", "torch.optim.",
    # tools that take functions or time code: what they run is probed under its own name
    "torch.autograd.forward_ad", "torch.autograd.functional.", "torch.autograd.graph.",
    "torch.func.", "torch.profiler.", "torch.utils.benchmark",
)  # fmt: skip
# Creation functions: probed for a float output without inputs (no graph expected).
CREATION = {
    "torch.arange": ((5,), {}), "torch.zeros": ((2, 3), {}), "torch.ones": ((2, 3), {}),
    "torch.empty": ((2, 3), {}), "torch.full": (((2, 3), 0.5), {}),
    "torch.rand": ((2, 3), {}), "torch.randn": ((2, 3), {}), "torch.randint": ((0, 5, (3,)), {}),
    "torch.randperm": ((4,), {}), "torch.linspace": ((0.0, 1.0, 5), {}),
    "torch.tensor": (([1.0, 2.0],), {}), "torch.from_numpy": (("np",), {}),
    "torch.meshgrid": (("row", "row"), {"indexing": "ij"}), "torch.multinomial": (("p", 2), {}),
    "torch.range": ((0, 4), {}), "torch.eye": ((3,), {}),
    "torch.sparse_coo_tensor": (("sidx", "svals", (2, 3)), {}),
}  # fmt: skip


def _inputs(lib):
    rng = np.random.default_rng(0)

    def t(a, grad=True):
        x = lib.tensor(a)
        return x.requires_grad_(True) if grad else x

    x = rng.standard_normal((3, 4))
    return {
        "x": t(x),
        "xT": t(x.T.copy()),
        "row": t(rng.standard_normal(4)),
        "row1": t(rng.standard_normal((1, 3, 4))),
        "b1": t(rng.standard_normal((2, 3, 4))),
        "b2": t(rng.standard_normal((2, 4, 5))),
        "q": t(rng.standard_normal((1, 2, 3, 4))),
        "seq": t(rng.standard_normal((5, 2, 4))),
        "seq4": t(rng.standard_normal((5, 2, 4))),
        "packed": lib.nn.utils.rnn.pack_padded_sequence(
            t(rng.standard_normal((5, 2, 4))), [3, 5], enforce_sorted=False
        ),
        "img": t(rng.standard_normal((1, 1, 5, 5))),
        "pair": [t(x), t(x + 1)],
        "mask": lib.tensor(x > 0),
        "idx": lib.tensor(np.array([0, 2, 4, 1])),
        "idx3": lib.tensor(np.array([0, 2])),
        "idx2": lib.tensor(np.array([[0], [2], [3]])),
        "target": lib.tensor(np.array([0, 3, 1])),
        "float32": lib.float32,
        "x32": lib.tensor(x.astype(np.float32)),
        "np": np.arange(3.0),
        "ar": lib.arange(3),
        "p": lib.tensor(np.array([0.2, 0.3, 0.5])),
        "equation": "ij,kj->ik",
        "col2": t(rng.standard_normal((3, 2))),
        "sidx": lib.tensor(np.array([[0, 1, 1], [2, 0, 2]])),
        "svals": t(rng.standard_normal(3)),
    }


def _resolve(lib, name: str):
    import importlib

    if lib.__name__ == "torch":
        target = name.replace("Tensor.", "torch.Tensor.", 1) if name.startswith("Tensor.") else name
    else:
        import api_coverage  # tools/ is put on sys.path by the caller

        return api_coverage.resolve(name)
    parts = target.split(".")
    obj = importlib.import_module(parts[0])
    path = parts[0]
    for p in parts[1:]:
        path = f"{path}.{p}"
        obj = getattr(obj, p) if hasattr(obj, p) else importlib.import_module(path)
    return obj


def has_probe(name: str) -> bool:
    """False for names that do not compute on tensors (nothing to differentiate)."""
    if name in NOT_ON_TENSORS or name.startswith(NOT_ON_TENSORS_PREFIXES):
        return False
    return not name.startswith("einops.layers.") or name in MODULES


def probe(lib, name: str):
    """Outputs of a small call of ``name`` under ``lib`` (torch or tinyattn)."""
    inp = _inputs(lib)

    def val(a):
        return inp[a] if isinstance(a, str) and a in inp else a

    if name in CREATION:
        args, kw = CREATION[name]
        return _resolve(lib, name)(*[val(a) for a in args], **kw)
    if name in MODULES:
        args, kw, inputs = MODULES[name]
        if name.startswith("einops.layers."):
            obj = _resolve(lib, name)
        else:
            obj = _resolve(lib, name)
        m = obj(*args, **kw).to(lib.float64)
        return m(*[inp[i] for i in inputs.split(",")])
    args, kw = ARGS.get(name, ((), {}))
    args = [val(a) for a in args]
    first = inp[INPUT_OF.get(name, "x")]
    if name.startswith("Tensor."):
        attr = name.split(".", 1)[1]
        if attr in PROPERTIES:
            return getattr(first, attr)
        if attr.endswith("_") or attr == "contiguous":
            first = first.t().clone() if attr == "contiguous" else first.clone()  # not a leaf
        return getattr(first, attr)(*args, **kw)
    f = _resolve(lib, name)
    if name.startswith("einops."):
        fn = name.split(".")[1]
        if fn == "einsum":
            return f(first, first, "i j, k j -> i k")
        pattern = {"rearrange": "a b -> b a", "repeat": "a b -> a b c"}[fn]
        return f(first, pattern, **({"c": 2} if fn == "repeat" else {}))
    if name.endswith("_"):  # an in-place function: on a copy, not on the leaf
        first = first.clone()
    return f(first, *args, **kw)


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [y for o in out for y in _flat(o)]
    return [out]


def probe_functions(name: str) -> set[str] | None:
    """Function classes in tinyattn's graph of the probe's outputs; None if not probed."""
    from harness import _functions_in_graph

    import tinyattn

    if not has_probe(name):
        return None
    outs = [o for o in _flat(probe(tinyattn, name)) if isinstance(o, tinyattn.Tensor)]
    return _functions_in_graph(outs)
