"""Subcommands of the ``embtie`` command line (see ``embtie.cli``)."""
