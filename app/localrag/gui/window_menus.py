"""The window's menu bar: File, Chat, View and Help, their actions kept on the window (``window.add_action``,
``window.api_action``…) so the views, the tests and the key filter reach them by name."""

from __future__ import annotations

from typing import Any

from localrag.gui.qt import QtGui


def action(window: Any, text: str, slot: Any, shortcut: Any = None, tip: str = "") -> QtGui.QAction:
    """An action of ``window`` that calls ``slot()``; its shortcut works wherever the window's focus is."""
    act = QtGui.QAction(text, window)
    if shortcut is not None:
        act.setShortcut(QtGui.QKeySequence(shortcut))
    if tip:
        act.setStatusTip(tip)
    act.triggered.connect(lambda _checked=False: slot())
    window.addAction(act)
    return act


def build_menus(window: Any) -> None:
    """Build the menu bar of ``window`` (a ``MainWindow``) and keep its actions on it."""
    bar = window.menuBar()
    file_menu = window.file_menu = bar.addMenu("&File")
    window.add_action = action(
        window,
        "&Add documents…",
        window.add_documents_dialog,
        "Ctrl+O",
        "Index files (PDF, Word, Markdown, HTML, text, images)",
    )
    window.add_folder_action = action(
        window,
        "Add &folder…",
        window.add_folder_dialog,
        "Ctrl+Shift+O",
        "Index every supported file in a folder",
    )
    window.watch_action = action(
        window,
        "&Watched folders…",
        window.watched_folders_dialog,
        None,
        "Folders whose new, changed and deleted files are picked up",
    )
    window.new_chat_action = window.chat_panel.new_chat_action  # Ctrl+N
    window.settings_action = action(window, "&Settings…", window.open_settings, "Ctrl+,")
    window.settings_action.setMenuRole(QtGui.QAction.MenuRole.PreferencesRole)
    window.api_action = QtGui.QAction("Local &API server", window, checkable=True)
    window.api_action.setStatusTip(
        "Let other programs on this computer search and ask your library over HTTP (127.0.0.1 only)"
    )
    window.api_action.toggled.connect(window.toggle_api)
    quit_action = action(window, "&Quit", window.close, QtGui.QKeySequence.StandardKey.Quit)
    quit_action.setMenuRole(QtGui.QAction.MenuRole.QuitRole)
    for a in (
        window.add_action,
        window.add_folder_action,
        window.watch_action,
        None,
        window.new_chat_action,
        None,
        window.settings_action,
        window.api_action,
        None,
        quit_action,
    ):
        file_menu.addSeparator() if a is None else file_menu.addAction(a)

    chat_menu = bar.addMenu("&Chat")
    window.send_action = action(window, "&Send", window.chat_panel.send, "Ctrl+Return")
    window.send_action.setShortcuts([QtGui.QKeySequence("Ctrl+Return"), QtGui.QKeySequence("Ctrl+Enter")])
    window.stop_action = window.chat_panel.stop_action  # Esc
    for a in (window.new_chat_action, window.send_action, window.stop_action):
        chat_menu.addAction(a)

    view_menu = bar.addMenu("&View")
    window.dev_action = window.dev_dock.toggleViewAction()
    window.dev_action.setText("&Developer pane")
    window.dev_action.setShortcut(QtGui.QKeySequence("Ctrl+D"))
    view_menu.addAction(window.dev_action)
    window.chats_action = QtGui.QAction("&Chats list", window, checkable=True, checked=True)
    window.chats_action.toggled.connect(window.chats_list.setVisible)
    view_menu.addAction(window.chats_action)
    window.checks_action = action(
        window,
        "&Test questions…",
        window.show_test_questions,
        "Ctrl+T",
        "Questions kept with the page that answers them: run them to see what a change did",
    )
    view_menu.addAction(window.checks_action)
    window.chat_panel.test_question_requested.connect(window.save_test_question)

    help_menu = bar.addMenu("&Help")
    window.about_action = action(window, "&About Local RAG", window.show_about)
    window.about_action.setMenuRole(QtGui.QAction.MenuRole.AboutRole)
    help_menu.addAction(window.about_action)
