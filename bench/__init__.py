"""Benchmarks: ``make bench`` runs every ``bench_*.py`` module and writes its figures as JSON.

Speed is measured here, never asserted in tests: timed assertions are flaky on shared machines.
"""
