"""Domain packs: knowledge of one field (finance…), registered through the hook points of ``core/hooks.py``.

A pack imports only the core; the core never imports a pack (it loads the built-in ones by name and others
through the ``localrag.domains`` entry-point group).
"""
