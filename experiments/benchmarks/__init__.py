"""Throughput and scale benchmarks (issue 7). Each module is a script: ``python -m experiments.benchmarks.<name>``."""
