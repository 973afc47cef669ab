"""``LLMProvider``: the language model loaded once and handed out, on the thread of its first caller."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from localrag.core.config import Settings
from localrag.core.errors import KnownError, ModelMissing, describe
from localrag.core.llm.llm import LocalLLM, load_llm
from localrag.core.progress import Cancelled, CancelToken

log = logging.getLogger("localrag.llm")


@dataclass
class ProviderState:
    """Where the model stands: ``idle``, ``loading``, ``ready`` or ``failed`` (with a message for the
    user)."""

    status: str = "idle"
    error: str = ""
    load_s: float = 0.0
    model: str = ""
    listeners: list[Callable[[ProviderState], None]] = field(default_factory=list, repr=False)


class LLMProvider:
    """Loads the language model once and hands it out. It starts no thread: ``load`` and ``get`` load on the
    calling thread, or wait for the load another thread has under way. A failed load stays failed until
    ``reload``; a cancelled one returns to ``idle``.

    Args:
        settings: which file, context size and threads.
        loader: how to load (default ``load_llm``, which can be cancelled); tests pass a loader that fails.
    """

    def __init__(self, settings: Settings, loader: Callable[[Settings], LocalLLM] | None = None) -> None:
        self.settings = settings
        self._loader = loader
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._llm: LocalLLM | None = None
        self.state = ProviderState()

    @property
    def ready(self) -> bool:
        return self.state.status == "ready"

    @property
    def failed(self) -> bool:
        return self.state.status == "failed"

    def add_listener(self, callback: Callable[[ProviderState], None]) -> None:
        """Call ``callback(state)`` after each change, on the thread that made it (the GUI re-emits it as a
        signal)."""
        self.state.listeners.append(callback)

    def load(self, cancel: CancelToken | None = None) -> LocalLLM:
        """Load on this thread (or wait for the load under way) and return the model.

        Raises:
            ModelMissing: the model cannot be loaded.
            Cancelled: ``cancel`` was set (the load stops at its next step; the provider is ``idle`` again).
        """
        return self.get(cancel)

    def get(self, cancel: CancelToken | None = None, timeout: float | None = None) -> LocalLLM:
        """The loaded model: loaded on this thread when no load has begun, else waited for.

        Raises:
            ModelMissing: the load failed.
            Cancelled: ``cancel`` was set while loading or waiting.
            TimeoutError: another thread's load did not finish within ``timeout`` seconds.
        """
        with self._lock:
            mine = self.state.status == "idle"
            if mine:
                self.state.status = "loading"
                self._done.clear()
        if mine:
            self._notify()
            self._load(cancel)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.wait(0.05):
            if cancel is not None:
                cancel.raise_if_cancelled()
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("The language model is still loading.")
        if self._llm is None:
            if self.state.status == "idle":  # the load under way was cancelled
                raise Cancelled()
            raise ModelMissing(self.state.error or "The language model is not loaded.")
        return self._llm

    @property
    def llm(self) -> LocalLLM | None:
        """The model if loaded, without waiting."""
        return self._llm

    def reload(self, settings: Settings | None = None) -> None:
        """Forget the model (another file was picked, or to retry after a failure); the next ``get`` loads
        again. The caller makes sure no load or generation runs."""
        with self._lock:
            if settings is not None:
                self.settings = settings
            self._llm = None
            self._done.clear()
            self.state.status = "idle"
            self.state.error = ""
        self._notify()

    def _load(self, cancel: CancelToken | None) -> None:
        started = time.monotonic()
        try:
            if self._loader is None:
                llm = load_llm(self.settings, cancel=cancel)
            else:
                llm = self._loader(self.settings)
        except Cancelled:
            log.info("loading the language model was cancelled")
            with self._lock:
                self.state.status = "idle"
                self._done.set()  # whoever waits sees the cancelled load; the next ``get`` loads again
            self._notify()
            raise
        except KnownError as exc:  # an environment problem: a missing or unreadable file
            log.warning("the language model cannot be loaded: %s", exc.message)
            self._finish(None, exc.message)
        except Exception as exc:  # a bug: its traceback in the log; retrieval keeps working
            message, _known = describe(exc, "loading the language model", log)
            self._finish(None, message)
        else:
            self.state.load_s = time.monotonic() - started
            self.state.model = llm.name
            self._finish(llm, "")

    def _finish(self, llm: LocalLLM | None, error: str) -> None:
        with self._lock:
            self._llm = llm
            self.state.error = error
            self.state.status = "ready" if llm is not None else "failed"
            self._done.set()
        self._notify()

    def _notify(self) -> None:
        for callback in list(self.state.listeners):
            try:
                callback(self.state)
            except Exception:  # a listener's bug must not break loading
                log.exception("LLM state listener failed")
