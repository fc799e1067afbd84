"""Comparison of tinyattn results with torch results, for the data tests."""


def same(ours, theirs, torch) -> None:
    """Assert a tinyattn structure equals a torch one: types, tensor dtypes, shapes, values."""
    import numpy as np

    import tinyattn

    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tinyattn.Tensor), type(ours)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs)
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs)
        assert list(ours) == list(theirs)
        for k in theirs:
            same(ours[k], theirs[k], torch)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs), (type(ours), type(theirs))
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            same(o, t, torch)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)
