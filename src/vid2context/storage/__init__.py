"""Storage backends behind one protocol; see ``base.py``."""

from .base import Storage
from .memory import MemoryStorage

__all__ = ["MemoryStorage", "Storage"]
