"""Tools for developing Local RAG, not part of the app: the window benchmark (``local-rag bench window``) and
the README's screenshots (``python -m localrag.devtools.screenshots``). They drive the real window, so they
import Qt; the app never imports them (the command line loads the benchmark only when it is asked for)."""
