raise AssertionError("never imported: the pyproject.toml is rejected first")
