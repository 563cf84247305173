"""Throughput and scale benchmarks. Each module is a script: ``python -m experiments.benchmarks.<name>``."""
