"""bench: synthetic investigations, benchmarks and reports."""
