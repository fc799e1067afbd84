import tinyattn


def test_version():
    assert tinyattn.__version__.count(".") == 2
