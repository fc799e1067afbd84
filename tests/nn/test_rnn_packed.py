"""Packed sequences: pack/pad against torch, and RNN/GRU/LSTM over packed batches in lockstep.

* ``pack_padded_sequence``/``pad_packed_sequence``/``pack_sequence``: gradcheck + torch
  parity (``check_op``), same ``batch_sizes``/``sorted_indices``/``unsorted_indices``/lengths;
* modules: float64 and float32 lockstep with torch from the same weights (packed output,
  padded output, ``h_n``/``c_n``, gradients of the input, the initial state and every
  parameter), unidirectional, bidirectional and multi-layer, ``enforce_sorted`` both ways;
  gradcheck of the packed GRU/LSTM w.r.t. the input and the initial state;
* without torch: the final state of each sequence equals running it alone, and padding
  never reaches an output or receives a gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity

import tinyattn
from tinyattn import nn
from tinyattn.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
)

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")

IN, HID, T, B = 2, 3, 4, 3
SORTED, UNSORTED = [4, 2, 2], [2, 4, 1]  # UNSORTED has a tie-free order and a length-1 sequence


def padded(batch_first=False, seed=1, trailing=(IN,)):
    return rand(B, T, *trailing, seed=seed) if batch_first else rand(T, B, *trailing, seed=seed)


# -- pack / pad ------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths, enforce_sorted", [(SORTED, True), (UNSORTED, False)])
@pytest.mark.parametrize("trailing", [(), (IN,)])
def test_pack_then_pad_gradcheck_and_parity(batch_first, lengths, enforce_sorted, trailing):
    def f(lib, x):
        rnn = lib.nn.utils.rnn
        packed = rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
        out, _ = rnn.pad_packed_sequence(
            packed, batch_first=batch_first, padding_value=-3.0, total_length=T + 1
        )
        return packed.data, out

    check_op(f, padded(batch_first, trailing=trailing))


def test_pack_sequence_gradcheck_and_parity():
    def f(lib, a, b, c):
        packed = lib.nn.utils.rnn.pack_sequence([a, b, c], enforce_sorted=False)
        return lib.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)[0]

    check_op(f, rand(2, IN, seed=1), rand(4, IN, seed=2), rand(1, IN, seed=3))


@needs_torch
@pytest.mark.parametrize(
    "lengths, enforce_sorted",
    [(SORTED, True), (SORTED, False), (UNSORTED, False), ([2, 2, 2], False), ([3, 1, 3], False)],
)
def test_packing_fields_match_torch(lengths, enforce_sorted):
    x = padded(trailing=())
    ours = pack_padded_sequence(tinyattn.tensor(x), lengths, enforce_sorted=enforce_sorted)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(
        torch.tensor(x), torch.tensor(lengths), enforce_sorted=enforce_sorted
    )
    for field in PackedSequence._fields:
        a, b = getattr(ours, field), getattr(theirs, field)
        assert (a is None) == (b is None), field
        if b is not None:
            assert a.dtype.name == str(b.dtype).replace("torch.", ""), field
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=field)
    _, len_o = pad_packed_sequence(ours)
    _, len_t = torch.nn.utils.rnn.pad_packed_sequence(theirs)
    np.testing.assert_array_equal(len_o.numpy(), len_t.numpy())
    assert len_o.dtype == tinyattn.int64


def test_packed_sequence_is_a_named_tuple():
    packed = pack_sequence([tinyattn.ones(3, 2), tinyattn.ones(1, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert isinstance(packed, tuple) and data is packed.data
    assert batch_sizes.tolist() == [2, 1, 1] and sorted_indices is None is unsorted_indices
    as64 = packed.to(tinyattn.float64)
    assert as64.data.dtype == tinyattn.float64 and as64.batch_sizes is batch_sizes
    assert packed.double().data.dtype == tinyattn.float64
    assert packed.float() is packed and packed.cpu() is packed and not packed.is_cuda


def test_pack_pad_bad_input():
    x = tinyattn.zeros(T, B, IN)
    with pytest.raises(RuntimeError, match=r"enforce_sorted.*lengths=\[2, 4, 1\]"):
        pack_padded_sequence(x, UNSORTED)
    with pytest.raises(RuntimeError, match=r"equal to batch_size, but got 2 \(batch_size=3\)"):
        pack_padded_sequence(x, [4, 2])
    with pytest.raises(RuntimeError, match=r"greater than 0.*lengths=\[4, 0, 0\]"):
        pack_padded_sequence(x, [4, 0, 0])
    with pytest.raises(RuntimeError, match=r"every length <= 4.*got max\(lengths\) = 5"):
        pack_padded_sequence(x, [5, 2, 1])  # torch reads past the input here; we refuse
    with pytest.raises(RuntimeError, match=r"1-D.*shape \(1, 3\)"):
        pack_padded_sequence(x, [[4, 2, 1]])
    with pytest.raises(RuntimeError, match="whole numbers"):
        pack_padded_sequence(x, [4.0, 2.5, 1.0])
    with pytest.raises(TypeError, match="'input' must be a Tensor, got list"):
        pack_padded_sequence([[1.0]], [1])
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        pack_padded_sequence(tinyattn.zeros(4), [4])
    packed = pack_padded_sequence(x, SORTED)
    with pytest.raises(ValueError, match="total_length=3 and max sequence length being 4"):
        pad_packed_sequence(packed, total_length=3)
    with pytest.raises(TypeError, match="'sequence' must be a PackedSequence, got tinyattn.Tensor"):
        pad_packed_sequence(x)
    with pytest.raises(TypeError, match="'sequences' must be a list"):
        pack_sequence(x)
    as_float = pack_padded_sequence(x, tinyattn.tensor([4.0, 2.0, 1.0]))  # whole floats: fine
    assert as_float.batch_sizes.tolist() == [3, 2, 1, 1]


# -- modules over packed batches ---------------------------------------------------------------
def _twins(name, seed=0, **options):
    """The tinyattn module and (if torch is there) torch's, with the same float64 weights."""
    ours = getattr(nn, name)(IN, HID, **options).double()
    if torch is None:
        return ours, None
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, name)(IN, HID, **options).double()
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def _state_arrays(name, layers, seed):
    h0 = rand(layers, B, HID, seed=seed)
    return (h0, rand(layers, B, HID, seed=seed + 1)) if name == "LSTM" else (h0,)


def _run(lib, module, x, states, lengths, batch_first, enforce_sorted):
    rnn = lib.nn.utils.rnn
    packed = rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
    hx = None if not states else (tuple(states) if len(states) == 2 else states[0])
    out, hidden = module(packed, hx)
    assert isinstance(out, rnn.PackedSequence)
    full, _ = rnn.pad_packed_sequence(out, batch_first=batch_first)
    hidden = list(hidden) if isinstance(hidden, tuple) else [hidden]
    return [out.data, full, *hidden], out


OPTIONS = [
    dict(),
    dict(batch_first=True),
    dict(bidirectional=True),
    dict(num_layers=2),
    dict(num_layers=2, bidirectional=True, batch_first=True),
]


@needs_torch
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("lengths, enforce_sorted", [(SORTED, True), (UNSORTED, False)])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lockstep_with_torch(name, options, lengths, enforce_sorted, with_state, dtype):
    ours, theirs = _twins(name, **options)
    ours.to(tinyattn.float32 if dtype == np.float32 else tinyattn.float64)
    theirs.to(torch.float32 if dtype == np.float32 else torch.float64)
    layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    bf = options.get("batch_first", False)
    arrays = [padded(bf)] + (list(_state_arrays(name, layers, seed=5)) if with_state else [])
    ins_o = [tinyattn.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ins_t = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    outs_o, packed_o = _run(tinyattn, ours, ins_o[0], ins_o[1:], lengths, bf, enforce_sorted)
    outs_t, packed_t = _run(torch, theirs, ins_t[0], ins_t[1:], lengths, bf, enforce_sorted)
    tol = dict(atol=1e-10, rtol=1e-10) if dtype == np.float64 else dict(atol=1e-5, rtol=1e-5)
    for o, t in zip(outs_o, outs_t, strict=True):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), **tol)
    np.testing.assert_array_equal(packed_o.batch_sizes.numpy(), packed_t.batch_sizes.numpy())
    rng = np.random.default_rng(3)
    seeds = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in outs_t[1:]]
    sum((o * tinyattn.tensor(s)).sum() for o, s in zip(outs_o[1:], seeds)).backward()
    sum((t * torch.tensor(s)).sum() for t, s in zip(outs_t[1:], seeds)).backward()
    for o, t in zip(ins_o, ins_t):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **tol)
    for (k, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=k, **tol)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("options", [dict(), dict(num_layers=2, bidirectional=True)])
def test_gradcheck_wrt_input_and_initial_state(name, options):
    ours, theirs = _twins(name, **options)
    layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)

    def f(lib, x, *states):
        module = theirs if lib is torch else ours
        module.to(lib.float32 if x.dtype == lib.float32 else lib.float64)
        return _run(lib, module, x, states, UNSORTED, False, False)[0][1:]

    arrays = (padded(), *_state_arrays(name, layers, seed=5))
    if layers == 1:
        check_op(f, *arrays)
    else:  # second order is the single layer's graph repeated: checked above, at 1/10 the cost
        run_gradcheck(f, *arrays)
        run_parity(f, *arrays)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_each_sequence_as_if_run_alone(name, bidirectional):
    """Packed output and final states equal running every sequence by itself, unpadded;
    NaN padding never reaches them, and padding gets a zero gradient."""
    module, _ = _twins(name, num_layers=2, bidirectional=bidirectional)
    x = padded()
    for b, n in enumerate(UNSORTED):
        x[n:, b] = np.nan
    xt = tinyattn.tensor(x, requires_grad=True)
    outs, _ = _run(tinyattn, module, xt, [], UNSORTED, False, False)
    full, hidden = outs[1], outs[2:]
    for b, n in enumerate(UNSORTED):
        alone_out, alone_hidden = module(tinyattn.tensor(x[:n, b : b + 1]))
        alone_hidden = alone_hidden if isinstance(alone_hidden, tuple) else (alone_hidden,)
        np.testing.assert_allclose(full.detach().numpy()[:n, b], alone_out.detach().numpy()[:, 0])
        assert np.all(full.detach().numpy()[n:, b] == 0.0)
        for ours, alone in zip(hidden, alone_hidden):
            np.testing.assert_allclose(ours.detach().numpy()[:, b], alone.detach().numpy()[:, 0])
    sum(h.sum() for h in hidden).backward()
    grad = xt.grad.numpy()
    assert np.all(np.isfinite(grad)) and np.all(grad[np.isnan(x)] == 0.0)
    assert np.abs(grad[~np.isnan(x)]).sum() > 0


def test_packed_module_bad_input():
    gru = nn.GRU(IN, HID)
    wide = pack_padded_sequence(tinyattn.zeros(T, B, IN + 1), SORTED)
    with pytest.raises(RuntimeError, match="input_size. Expected 2, got 3"):
        gru(wide)
    packed = pack_padded_sequence(tinyattn.zeros(T, B, IN), SORTED)
    with pytest.raises(RuntimeError, match=r"expected hidden size \(1, 3, 3\), got \(1, 2, 3\)"):
        gru(packed, tinyattn.zeros(1, 2, HID))
    with pytest.raises(TypeError, match="hx must be a Tensor, got tuple"):
        gru(packed, (tinyattn.zeros(1, B, HID),))
    lstm = nn.LSTM(IN, HID)
    with pytest.raises(TypeError, match=r"hx must be a tuple \(h_0, c_0\), got tinyattn.Tensor"):
        lstm(packed, tinyattn.zeros(1, B, HID))
    with pytest.raises(RuntimeError, match=r"c_0 size \(1, 3, 3\), got \(1, 3, 2\)"):
        lstm(packed, (tinyattn.zeros(1, B, HID), tinyattn.zeros(1, B, 2)))
    flat = packed._replace(data=tinyattn.zeros(7, 1, IN))
    with pytest.raises(ValueError, match=r"\(sum\(lengths\), input_size\), got shape \(7, 1, 2\)"):
        gru(flat)


# -- unpad / unpack --------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_gradcheck_and_parity(batch_first):
    lengths = [3, 1, 4]

    def f(lib, x):
        rnn = lib.nn.utils.rnn
        # (x * 1: torch transposes a time-major input in place, which a leaf refuses)
        pieces = rnn.unpad_sequence(x * 1, lib.tensor(lengths), batch_first=batch_first)
        return tuple(p * (i + 1) for i, p in enumerate(pieces))

    check_op(f, padded(batch_first))


def test_unpack_sequence_gradcheck_and_parity():
    def f(lib, a, b, c):
        rnn = lib.nn.utils.rnn
        pieces = rnn.unpack_sequence(rnn.pack_sequence([a, b, c], enforce_sorted=False))
        return tuple(p * (i + 1) for i, p in enumerate(pieces))

    check_op(f, rand(2, IN, seed=1), rand(4, IN, seed=2), rand(1, IN, seed=3))


def test_unpad_unpack_round_trip_and_bad_input():
    from tinyattn.nn.utils.rnn import pad_sequence, unpack_sequence, unpad_sequence

    seqs = [tinyattn.tensor(np.arange(n, dtype=np.float64) + 10 * n) for n in (2, 0, 3)]
    back = unpad_sequence(pad_sequence(seqs), [2, 0, 3])
    assert [s.tolist() for s in back] == [s.tolist() for s in seqs]
    x = tinyattn.zeros(4, 3)
    assert x.shape == (4, 3)  # the input is not transposed in place (torch's would be)
    with pytest.raises(RuntimeError, match=r"unpad_sequence\(\).*batch_size"):
        unpad_sequence(x, [1, 2])
    with pytest.raises(RuntimeError, match=r"unpad_sequence\(\).*max\(lengths\) = 5"):
        unpad_sequence(x, [5, 1, 1])
    with pytest.raises(TypeError, match="padded_sequences"):
        unpad_sequence([x], [1])
    with pytest.raises(TypeError, match="PackedSequence"):
        unpack_sequence(x)
    nested = [tinyattn.ones(2, 3), tinyattn.ones(1, 3)]
    assert [tuple(s.shape) for s in unpack_sequence(pack_sequence(nested))] == [(2, 3), (1, 3)]
