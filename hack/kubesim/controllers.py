"""Placeholder; replaced below."""


def build(sim):
    return []
