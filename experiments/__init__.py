"""Hydra entry points, sweeps and benchmarks."""
