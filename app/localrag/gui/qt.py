"""The one place PySide6 is imported from."""

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Property, QObject, QRunnable, Qt, QThread, QThreadPool, QTimer, Signal, Slot

__all__ = [
    "Property",
    "QObject",
    "QRunnable",
    "QThread",
    "QThreadPool",
    "QTimer",
    "Qt",
    "QtCore",
    "QtGui",
    "QtWidgets",
    "Signal",
    "Slot",
]
