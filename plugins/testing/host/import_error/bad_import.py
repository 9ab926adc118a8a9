import ge_no_such_module_for_tests  # noqa: F401
