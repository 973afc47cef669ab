"""The one place PySide6 is imported from."""

from PySide6 import QtCore, QtGui, QtWidgets  # noqa: F401
from PySide6.QtCore import Property, QObject, QRunnable, Qt, QThread, QThreadPool, QTimer, Signal, Slot  # noqa: F401

__all__ = [
    "QtCore",
    "QtGui",
    "QtWidgets",
    "QObject",
    "QRunnable",
    "Qt",
    "QThread",
    "QThreadPool",
    "QTimer",
    "Signal",
    "Slot",
    "Property",
]
