"""Test questions: questions kept with the page that answers them, run again after a change to see whether
retrieval still finds the page and the answer still quotes it (``run.run_checks``); stored in the library's
database (``store``), read and written as the JSONL lines of the ``local-rag eval`` datasets (``questions``).
"""
