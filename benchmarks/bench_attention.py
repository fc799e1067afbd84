"""Thin entry point: ``python benchmarks/bench_attention.py [--quick] [--json PATH]``."""

from tinyattn.bench import main

if __name__ == "__main__":
    main()
