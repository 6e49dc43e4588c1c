"""mkdocs-macros module (placeholder)."""


def define_env(env):
    pass
