class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("str() of this exception fails too")


raise UnprintableError("hidden")
