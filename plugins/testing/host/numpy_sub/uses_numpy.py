import numpy  # noqa: F401  (default isolation: refused in a sub-interpreter)
