"""lessonbuild: the machinery that builds and checks the lesson site.
Data flow: slides -> deck -> engine and exercises -> plugin (MkDocs);
see ARCHITECTURE.md."""
