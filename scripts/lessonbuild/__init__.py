"""lessonbuild: the machinery that builds and checks the lesson site.

Data flow: slide files -> deck (the only parser) -> engine (runs snippets,
checks Output blocks) and exercises (widgets) -> plugin (MkDocs).
See ARCHITECTURE.md at the repository root.
"""
