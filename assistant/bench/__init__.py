"""Benchmarks: the streaming LoCoMo evaluation with its baselines, and the synthetic scale run."""
