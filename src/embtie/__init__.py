"""embtie: input/output embedding sharing strategies for text-generation models."""

__version__ = "0.1.0"
