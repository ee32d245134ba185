"""Pieces shared by every backend family: HTTP, options, naming, specs."""
