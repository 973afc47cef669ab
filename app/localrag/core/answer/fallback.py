"""What an answer falls back to when one of its steps fails: the passages found, with a one-line notice.

Picking the sentences that answer (evidence), the model's rewording and the check of its sentences each add
to an answer the sources already give. A fault in one of them — an environment problem or a bug — must not
cost the person the passages found: the step is dropped, the answer goes on from what was found, and the
notice says what was left out. A bug's traceback goes to the log the notice names.
"""

from __future__ import annotations

import logging

from localrag.core import paths
from localrag.core.errors import as_known

EVIDENCE = "the sentences that answer could not be picked from the passages found"
REWORDING = "the model's rewording stopped"
CHECKING = "the model's sentences could not be checked against your documents"
# Said after what failed: what the person gets instead.
PASSAGES = "the passages found are listed"
QUOTED = "the answer is quoted from your documents"


def step_failed(what: str, instead: str, exc: BaseException, log: logging.Logger) -> str:
    """Log the failure of ``what`` (a bug with its traceback) and return the person's one-line notice."""
    known = as_known(exc)
    if known is not None:
        log.warning("%s: %s", what, known.message)
        return f"{_capital(what)} ({known.message.rstrip('.')}); {instead}."
    log.error("%s (a bug)", what, exc_info=exc)
    return f"{_capital(what)} (a fault, logged in {paths.log_file()}); {instead}."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
