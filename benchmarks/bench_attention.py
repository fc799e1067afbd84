"""Thin entry point: ``python benchmarks/bench_attention.py [options]`` = ``python -m tinyattn.bench``."""

import sys

from tinyattn.bench import main

if __name__ == "__main__":
    main(sys.argv[1:])
