"""Diagnostics and theory checks: pure functions over strategies, tensors or saved files."""
