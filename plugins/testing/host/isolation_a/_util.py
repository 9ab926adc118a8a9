"""A module named util, different in each isolation plugin, with a global counter."""
BASE = 100
counter = 0


def bump():
    global counter
    counter += 1
    return BASE + counter
